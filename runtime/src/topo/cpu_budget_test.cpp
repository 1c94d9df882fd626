// SPDX-License-Identifier: MIT
// The CPUs this process may use (blitz::cpu_budget, issue 47): the cgroup quota read from fake
// cgroup trees (v2, v1, a container's namespace, both at once, none, garbage), and the affinity
// mask of a thread restricted to one CPU, down to the runtime's default worker count.

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "blitz/config.hpp"
#include "blitz/runtime.hpp"
#include "blitz/topology.hpp"

namespace {

namespace fs = std::filesystem;

// A temporary directory with files written into it, removed at the end.
struct fake_tree {
    fs::path root;
    fake_tree() {
        char t[] = "/tmp/blitz-cgroup-XXXXXX";
        root = ::mkdtemp(t);
    }
    ~fake_tree() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    std::string write(const std::string& rel, const std::string& text) const {
        const fs::path p = root / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
        return p.string();
    }
    std::string path(const std::string& rel) const { return (root / rel).string(); }
};

// A mountinfo line: the cgroup2 hierarchy, or a v1 hierarchy with `controllers`, mounted at
// `point` with `root` as the mount's root.
std::string cgroup2_mount(const std::string& point, const std::string& root = "/") {
    return "41 31 0:38 " + root + " " + point + " rw,relatime - cgroup2 cgroup2 rw\n";
}
std::string cgroup1_mount(const std::string& point, const std::string& controllers) {
    return "32 31 0:29 / " + point + " rw,relatime - cgroup cgroup rw," + controllers + "\n";
}

unsigned affinity_now() {
    cpu_set_t s;
    CPU_ZERO(&s);
    return sched_getaffinity(0, sizeof s, &s) == 0 ? static_cast<unsigned>(CPU_COUNT(&s)) : 0;
}

TEST(CpuBudget, CgroupV2TakesTheSmallestQuotaOnThePath) {
    fake_tree t;
    t.write("cg2/a/cpu.max", "150000 100000\n");  // 1.5 CPUs
    t.write("cg2/a/b/cpu.max", "max 100000\n");   // none here
    t.write("cg2/cpu.max", "800000 100000\n");    // 8 at the root
    const auto cg = t.write("proc_cgroup", "0::/a/b\n");
    const auto mi = t.write("mountinfo", cgroup2_mount(t.path("cg2")));
    const blitz::cpu_budget b = blitz::read_cpu_budget(cg, mi);
    EXPECT_DOUBLE_EQ(b.quota, 1.5);
    EXPECT_EQ(b.quota_source, t.path("cg2/a/cpu.max"));
    EXPECT_EQ(b.count, std::min(2u, affinity_now()));
    EXPECT_NE(b.to_string().find("quota 1.50 CPUs"), std::string::npos) << b.to_string();
}

TEST(CpuBudget, CgroupV1ReadsTheCpuHierarchysQuotaOverPeriod) {
    fake_tree t;
    t.write("cpu/docker/x/cpu.cfs_quota_us", "300000\n");
    t.write("cpu/docker/x/cpu.cfs_period_us", "100000\n");
    t.write("cpu/cpu.cfs_quota_us", "-1\n");
    t.write("cpu/cpu.cfs_period_us", "100000\n");
    const auto cg = t.write("proc_cgroup", "5:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n0::/\n");
    const auto mi = t.write("mountinfo", cgroup1_mount(t.path("cpu"), "cpu,cpuacct") +
                                             cgroup1_mount("/nonexistent", "memory"));
    const blitz::cpu_budget b = blitz::read_cpu_budget(cg, mi);
    EXPECT_DOUBLE_EQ(b.quota, 3.0);
    EXPECT_EQ(b.count, std::min(3u, affinity_now()));
}

TEST(CpuBudget, AContainersNamespaceShowsItsOwnCgroupAsTheMountsRoot) {
    fake_tree t;
    t.write("cg2/cpu.max", "100000 100000\n");  // 1 CPU, at the mount point itself
    const auto cg = t.write("proc_cgroup", "0::/\n");
    const auto mi = t.write("mountinfo", cgroup2_mount(t.path("cg2"), "/docker/x"));
    const blitz::cpu_budget b = blitz::read_cpu_budget(cg, mi);
    EXPECT_DOUBLE_EQ(b.quota, 1.0);
    EXPECT_EQ(b.count, 1u);
}

TEST(CpuBudget, HybridHierarchiesTakeTheSmallerQuota) {
    fake_tree t;
    t.write("cg2/s/cpu.max", "400000 100000\n");
    t.write("cpu/s/cpu.cfs_quota_us", "50000\n");  // half a CPU: rounded up to 1
    t.write("cpu/s/cpu.cfs_period_us", "100000\n");
    const auto cg = t.write("proc_cgroup", "1:cpu:/s\n0::/s\n");
    const auto mi =
        t.write("mountinfo", cgroup2_mount(t.path("cg2")) + cgroup1_mount(t.path("cpu"), "cpu"));
    const blitz::cpu_budget b = blitz::read_cpu_budget(cg, mi);
    EXPECT_DOUBLE_EQ(b.quota, 0.5);
    EXPECT_EQ(b.count, 1u);
}

TEST(CpuBudget, NoQuotaOrUnreadableFilesLeaveTheAffinityMask) {
    fake_tree t;
    t.write("cg2/a/cpu.max", "max 100000\n");
    t.write("cg2/b/cpu.max", "garbage\n");
    for (const char* path : {"0::/a\n", "0::/b\n", "0::/missing\n", "not a cgroup line\n"}) {
        const auto cg = t.write("proc_cgroup", path);
        const auto mi = t.write("mountinfo", cgroup2_mount(t.path("cg2")));
        const blitz::cpu_budget b = blitz::read_cpu_budget(cg, mi);
        EXPECT_EQ(b.quota, 0.0) << path;
        EXPECT_EQ(b.count, std::max(1u, affinity_now())) << path;
    }
    const blitz::cpu_budget none = blitz::read_cpu_budget(t.path("absent"), t.path("absent"));
    EXPECT_EQ(none.quota, 0.0);
    EXPECT_GE(none.count, 1u);
}

// A thread restricted to one CPU: its budget says so, and a runtime it starts with the default
// worker count runs one worker.
TEST(CpuBudget, AThreadInAOneCpuMaskStartsOneWorker) {
    unsigned workers = 0, count = 0, affinity = 0;
    std::string list;
    std::thread th([&] {
        cpu_set_t all;
        CPU_ZERO(&all);
        ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
        int first = 0;
        while (!CPU_ISSET(first, &all)) ++first;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
        const blitz::cpu_budget b = blitz::read_cpu_budget();
        count = b.count;
        affinity = b.affinity;
        list = b.affinity_list;
        EXPECT_EQ(list, std::to_string(first));
        blitz::runtime rt(blitz::config{});
        workers = rt.num_workers();
    });
    th.join();
    EXPECT_EQ(affinity, 1u);
    EXPECT_EQ(count, 1u);
    EXPECT_EQ(workers, 1u);
}

}  // namespace
