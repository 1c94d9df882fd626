// SPDX-License-Identifier: MIT
// The oneTBB peer: skynet, fib and the remote spawn shape with tbb::task_group inside a
// task_arena of N slots (libtbb-dev). The arena's slot count is the worker count; the thread
// that enters the arena takes one slot, as TBB always does.

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "peer_main.hpp"

namespace {

tbb::task_arena& arena(unsigned n) {
    static tbb::global_control limit(tbb::global_control::max_allowed_parallelism, n);
    static tbb::task_arena a(static_cast<int>(n));
    return a;
}

std::uint64_t skynet(std::uint64_t num, std::uint64_t size) {
    if (size == 1) return num;
    std::uint64_t part[10];
    tbb::task_group g;
    const std::uint64_t sub = size / 10;
    for (std::uint64_t i = 0; i < 10; ++i)
        g.run([&part, i, num, sub] { part[i] = skynet(num + i * sub, sub); });
    g.wait();
    std::uint64_t sum = 0;
    for (auto p : part) sum += p;
    return sum;
}

std::uint64_t fib(int n) {
    if (n < 2) return static_cast<std::uint64_t>(n);
    std::uint64_t a = 0, b = 0;
    tbb::task_group g;
    g.run([&] { a = fib(n - 1); });
    g.run([&] { b = fib(n - 2); });
    g.wait();
    return a + b;
}

peer::rep skynet_1m(unsigned w) {
    std::uint64_t sum = 0;
    const auto t0 = peer::steady::now();
    arena(w).execute([&] { sum = skynet(0, 1'000'000); });
    const double ns = peer::since(t0);
    if (sum != 499999500000ull) {
        std::cerr << "skynet: wrong sum\n";
        std::exit(1);
    }
    return peer::timed(ns);
}

peer::rep fib_30(unsigned w) {
    std::uint64_t v = 0;
    const auto t0 = peer::steady::now();
    arena(w).execute([&] { v = fib(30); });
    const double ns = peer::since(t0);
    if (v != 832040) {
        std::cerr << "fib: wrong value\n";
        std::exit(1);
    }
    return peer::timed(ns);
}

// 10,000 empty tasks run from one task (local) or from the thread entering the arena (remote),
// then waited for.
peer::rep spawn_many(unsigned w, bool local) {
    std::atomic<int> ran{0};
    const auto t0 = peer::steady::now();
    arena(w).execute([&] {
        tbb::task_group g;
        auto spawn_all = [&] {
            for (int i = 0; i < 10'000; ++i)
                g.run([&] { ran.fetch_add(1, std::memory_order_relaxed); });
        };
        if (local) {
            tbb::task_group outer;
            outer.run(spawn_all);
            outer.wait();
        } else {
            spawn_all();
        }
        g.wait();
    });
    return peer::timed(peer::since(t0));
}

}  // namespace

int main(int argc, char** argv) {
    const std::string version =
        std::string("oneTBB ") + TBB_VERSION_STRING + " (Debian libtbb-dev)";
    const std::vector<peer::workload> all = {
        {"spawn_many_local", "scheduler", 10'000, [](unsigned w) { return spawn_many(w, true); }},
        {"spawn_many_remote_idle", "scheduler", 10'000,
         [](unsigned w) { return spawn_many(w, false); }},
        {"skynet_1m", "fork-join", 1'111'111, skynet_1m},
        {"fib_30", "fork-join", 2'692'537, fib_30},
    };
    return peer::main("tbb", version, all, argc, argv);
}
