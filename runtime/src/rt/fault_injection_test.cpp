// SPDX-License-Identifier: MIT
// Issue 19: deliberate resource failures (blitz/testing/fault_injection.hpp, faults build).
// Each failure gives a clear error at the call that asked for the resource, leaks nothing, and
// leaves the runtime running; a runtime that cannot start its workers leaves no thread behind;
// a blocking job whose thread cannot start is queued for a running thread or refused, never
// both and never lost.

#include "blitz/testing/fault_injection.hpp"

#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz/blocking.hpp"
#include "task/alloc_stats.hpp"

namespace blitz {
namespace {

using testing::failure_site;

// Threads of this process (their ids in /proc/self/task). The kernel's io_uring workers
// (iou-wrk-*, iou-sqp-*) are listed there too, but come and go on the kernel's schedule (an io-wq
// worker idles for seconds before it exits), so they are left out, and so is a thread that exits
// while it is listed (its comm is gone).
std::set<std::string> thread_ids() {
    std::set<std::string> ids;
    if (DIR* d = opendir("/proc/self/task")) {
        while (dirent* e = readdir(d)) {
            if (e->d_name[0] == '.') continue;
            char comm[64] = {};
            const std::string path = std::string("/proc/self/task/") + e->d_name + "/comm";
            bool alive = false;
            if (FILE* f = std::fopen(path.c_str(), "r")) {
                alive = std::fgets(comm, sizeof comm, f) != nullptr;
                std::fclose(f);
            }
            if (alive && std::strncmp(comm, "iou-", 4) != 0) ids.insert(e->d_name);
        }
        closedir(d);
    }
    return ids;
}

class FaultInjection : public ::testing::Test {
protected:
    void TearDown() override { testing::clear_failures(); }
};

task<int> forty_two() { co_return 42; }

TEST_F(FaultInjection, ASpawnWhoseBlockCannotBeAllocatedThrowsAndLeaksNothing) {
    const auto before = detail::alloc_stats::read();
    {
        config c;
        c.workers = 2;
        runtime rt(c);
        testing::fail_next(failure_site::task_alloc);
        EXPECT_THROW((void)rt.spawn(forty_two()), std::bad_alloc);
        EXPECT_EQ(rt.spawn(forty_two()).join(), 42);  // the runtime runs on
    }
    const auto after = detail::alloc_stats::read();
    EXPECT_EQ(after.allocs - before.allocs, after.frees - before.frees);
}

task<int> spawn_two_children() {
    int sum = 0;
    for (int i = 0; i < 2; ++i) sum += co_await spawn(forty_two());
    co_return sum;
}

TEST_F(FaultInjection, AnAllocationFailureInsideATaskReachesItsJoinHandle) {
    const auto before = detail::alloc_stats::read();
    {
        config c;
        c.workers = 2;
        runtime rt(c);
        // The parent's block and its first child's succeed; the second child's fails.
        testing::fail_next(failure_site::task_alloc, 1, 2);
        auto h = rt.spawn(spawn_two_children());
        EXPECT_THROW(h.join(), std::bad_alloc);
        testing::clear_failures();
        EXPECT_EQ(rt.spawn(spawn_two_children()).join(), 84);
    }
    const auto after = detail::alloc_stats::read();
    EXPECT_EQ(after.allocs - before.allocs, after.frees - before.frees);
}

TEST_F(FaultInjection, AChannelWhoseStateCannotBeAllocatedThrows) {
    testing::fail_next(failure_site::channel_alloc);
    EXPECT_THROW((void)channel<int>(4), std::bad_alloc);
    auto [tx, rx] = channel<int>(4);  // the next one is fine
    EXPECT_TRUE(tx.try_send(1).sent());
    EXPECT_EQ(rx.try_recv(), 1);
}

TEST_F(FaultInjection, AWorkerThatCannotStartFailsTheConstructorAndLeavesNoThread) {
    // A sanitizer's runtime starts its own helper thread at the first thread creation: let that
    // happen before counting.
    std::thread([] {}).join();
    const std::set<std::string> threads_before = thread_ids();
    config c;
    c.workers = 4;
    testing::fail_next(failure_site::worker_thread, 1, 2);  // the third worker
    try {
        runtime rt(c);
        ADD_FAILURE() << "the runtime started without its third worker";
    } catch (const std::system_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot start worker thread 3 of 4"),
                  std::string::npos)
            << e.what();
        EXPECT_EQ(e.code(), std::errc::resource_unavailable_try_again);
    }
    // No thread the failed constructor started is left (one of an earlier test may have ended
    // meanwhile: the ids after must be among those before).
    for (const std::string& id : thread_ids()) {
        EXPECT_TRUE(threads_before.count(id)) << "thread " << id << " was left behind";
    }
    runtime rt(c);  // and the next runtime starts
    EXPECT_EQ(rt.spawn(forty_two()).join(), 42);
}

TEST_F(FaultInjection, ABlockingJobWithoutAThreadIsRefusedAndNeverRuns) {
    config c;
    c.workers = 1;
    std::atomic<bool> ran{false};
    {
        runtime rt(c);
        testing::fail_next(failure_site::blocking_thread);
        try {
            (void)rt.spawn_blocking([&] { ran = true; });
            ADD_FAILURE() << "spawn_blocking succeeded with no thread to run the job";
        } catch (const std::system_error& e) {
            EXPECT_NE(std::string(e.what()).find("cannot start a blocking-pool thread"),
                      std::string::npos)
                << e.what();
        }
        EXPECT_EQ(rt.spawn_blocking([] { return 7; }).join(), 7);  // the pool runs on
    }
    EXPECT_FALSE(ran.load()) << "a refused job ran anyway";
}

TEST_F(FaultInjection, ABlockingJobWhoseExtraThreadCannotStartWaitsForARunningOne) {
    config c;
    c.workers = 1;
    runtime rt(c);
    std::atomic<bool> release{false};
    auto first = rt.spawn_blocking([&] {
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 1;
    });
    testing::fail_next(failure_site::blocking_thread);
    auto second = rt.spawn_blocking([] { return 2; });  // queued behind the first: no throw
    release = true;
    EXPECT_EQ(first.join(), 1);
    EXPECT_EQ(second.join(), 2);
}

// There is no limit on timer slots to exhaust (the wheel's entries live in the sleeping tasks'
// frames); keep it so: 100,000 sleepers on one runtime all wake.
TEST_F(FaultInjection, TimersHaveNoSlotLimit) {
    config c;
    c.workers = 2;
    runtime rt(c);
    constexpr int n = 100'000;
    std::atomic<int> woke{0};
    std::vector<join_handle<void>> hs;
    hs.reserve(n);
    for (int i = 0; i < n; ++i) {
        hs.push_back(rt.spawn([](int ms, std::atomic<int>& w) -> task<void> {
            co_await sleep(std::chrono::milliseconds(ms));
            w.fetch_add(1);
        }(1 + i % 3, woke)));
    }
    for (auto& h : hs) h.join();
    EXPECT_EQ(woke.load(), n);
}

}  // namespace
}  // namespace blitz
