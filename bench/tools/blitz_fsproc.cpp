// SPDX-License-Identifier: MIT
// blitz's side of the file and process benchmark rows (issue 17, scripts/bench_fsproc.py).
//
//   blitz_fsproc file_read --path P --ops N --inflight K --workers W --fs uring|backend|pool
//       K tasks, each with its own fs::file on P, read N/K random 4 KiB-aligned 4 KiB blocks
//       (a fixed xorshift seed per task) with read_at; --fs pool turns config fs_io_uring off.
//   blitz_fsproc spawn_true --ops N --inflight K --workers W
//       K tasks each run /bin/true (process::command(...).status()) until N have exited.
//   blitz_fsproc spawn_floor --ops N
//       No runtime: posix_spawn and waitpid of /bin/true in a loop, the system's own cost.
//
// Prints one line: {"ops": N, "secs": wall, "cpu_secs": user+system of the process, "path":
// what fs::counts() says ran}.

#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "blitz/blitz.hpp"

namespace {

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: blitz_fsproc file_read --path P [--ops N] [--inflight K] [--workers W] "
                 "[--fs uring|backend|pool]\n"
                 "       blitz_fsproc spawn_true [--ops N] [--inflight K] [--workers W]\n"
                 "       blitz_fsproc spawn_floor [--ops N]\n");
    std::exit(2);
}

blitz::task<std::uint64_t> reader(std::string path, std::uint64_t ops, std::uint64_t blocks,
                                  std::uint64_t seed) {
    auto f = co_await blitz::fs::file::open(path);
    if (!f) {
        std::fprintf(stderr, "blitz_fsproc: %s\n", f.message().c_str());
        std::exit(1);
    }
    std::array<std::byte, 4096> buf;
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1, bytes = 0;
    for (std::uint64_t i = 0; i < ops; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        auto n = co_await f->read_at(buf, (x % blocks) * 4096);
        if (!n || *n != buf.size()) {
            std::fprintf(stderr, "blitz_fsproc: short read: %s\n", n.message().c_str());
            std::exit(1);
        }
        bytes += *n;
    }
    co_return bytes;
}

blitz::task<void> spawner(std::atomic<std::int64_t>& left) {
    while (left.fetch_sub(1, std::memory_order_relaxed) > 0) {
        auto st = co_await blitz::process::command("/bin/true").status();
        if (!st || !st->success()) {
            std::fprintf(stderr, "blitz_fsproc: /bin/true failed\n");
            std::exit(1);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) usage();
    const std::string mode = argv[1];
    std::string path, fs_mode = "uring";
    std::uint64_t ops = 100000, inflight = 64;
    unsigned workers = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--path") {
            path = v;
        } else if (k == "--ops") {
            ops = std::stoull(v);
        } else if (k == "--inflight") {
            inflight = std::stoull(v);
        } else if (k == "--workers") {
            workers = static_cast<unsigned>(std::stoul(v));
        } else if (k == "--fs") {
            fs_mode = v;
        } else {
            usage();
        }
    }
    if (inflight == 0 || (mode == "file_read" && path.empty())) usage();
    if (mode == "spawn_floor") {
        const double cpu0 = cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        for (std::uint64_t i = 0; i < ops; ++i) {
            pid_t pid;
            char prog[] = "/bin/true";
            char* args[] = {prog, nullptr};
            int status = 0;
            if (posix_spawn(&pid, prog, nullptr, nullptr, args, environ) != 0 ||
                waitpid(pid, &status, 0) != pid || status != 0) {
                std::fprintf(stderr, "blitz_fsproc: /bin/true failed\n");
                return 1;
            }
        }
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("{\"ops\": %llu, \"secs\": %.6f, \"cpu_secs\": %.6f, \"path\": \"-\"}\n",
                    static_cast<unsigned long long>(ops), secs, cpu_seconds() - cpu0);
        return 0;
    }
    blitz::config cfg;
    cfg.workers = workers;
    cfg.fs_io_uring = fs_mode != "pool";
    // "uring": the default backend (automatic: files on a ring beside epoll, issue 44);
    // "backend": the io_uring backend's own ring (prefer_io_uring).
    if (fs_mode == "backend") cfg.io_backend = blitz::io_backend_kind::prefer_io_uring;
    blitz::runtime rt(cfg);
    const auto before = blitz::fs::counts();
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    if (mode == "file_read") {
        struct stat st{};
        if (::stat(path.c_str(), &st) != 0 || st.st_size < 4096) usage();
        const std::uint64_t blocks = static_cast<std::uint64_t>(st.st_size) / 4096;
        rt.block_on([](std::string path, std::uint64_t ops, std::uint64_t k,
                       std::uint64_t blocks) -> blitz::task<void> {
            std::vector<blitz::join_handle<std::uint64_t>> hs;
            for (std::uint64_t i = 0; i < k; ++i) {
                hs.push_back(blitz::spawn(reader(path, ops / k, blocks, i + 1)));
            }
            for (auto& h : hs) (void)co_await h;
        }(path, ops, inflight, blocks));
        ops = ops / inflight * inflight;
    } else if (mode == "spawn_true") {
        std::atomic<std::int64_t> left{static_cast<std::int64_t>(ops)};
        rt.block_on([](std::atomic<std::int64_t>& left, std::uint64_t k) -> blitz::task<void> {
            std::vector<blitz::join_handle<void>> hs;
            for (std::uint64_t i = 0; i < k; ++i) hs.push_back(blitz::spawn(spawner(left)));
            for (auto& h : hs) co_await h;
        }(left, inflight));
    } else {
        usage();
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const auto after = blitz::fs::counts();
    const char* ran = after.io_uring > before.io_uring ? "io_uring" : "blocking_pool";
    if (mode != "file_read") ran = "-";
    std::printf("{\"ops\": %llu, \"secs\": %.6f, \"cpu_secs\": %.6f, \"path\": \"%s\"}\n",
                static_cast<unsigned long long>(ops), secs, cpu, ran);
}
