// SPDX-License-Identifier: MIT
// Metrics: what the scheduler did. runtime::metrics() is a snapshot of counters kept per worker
// (polls, steals, parks, ...) and for the runtime (spawns, claims of parked workers, timers, the
// I/O driver), cheap enough to read in production. This program spawns a burst of tasks, then
// prints what each worker did with them. Exit status 0 when the counters add up.
//
//   build/release/example_metrics

#include <blitz/blitz.hpp>
#include <cstdio>
#include <vector>

blitz::task<long> leaf(long i) {
    if (i % 64 == 0) co_await blitz::yield_now();  // a few tasks go back to the queue once
    co_return i;
}

blitz::task<long> burst(long n) {
    std::vector<blitz::join_handle<long>> hs;
    hs.reserve(n);
    for (long i = 0; i < n; ++i) hs.push_back(blitz::spawn(leaf(i)));
    long sum = 0;
    for (auto& h : hs) sum += co_await h;
    co_return sum;
}

int main() {
    blitz::config c;
    c.workers = 2;
    blitz::runtime rt(c);
    const blitz::runtime_metrics before = rt.metrics();
    const long n = 100'000;
    const long sum = rt.block_on(burst(n));
    const blitz::runtime_metrics m = rt.metrics();

    std::printf("%-7s %10s %10s %10s %10s %8s %8s\n", "worker", "polls", "lifo hits", "ring pops",
                "stolen", "steals", "parks");
    for (std::size_t i = 0; i < m.workers.size(); ++i) {
        const blitz::worker_metrics& w = m.workers[i];
        std::printf("w%-6zu %10llu %10llu %10llu %10llu %8llu %8llu\n", i,
                    (unsigned long long)w.polls, (unsigned long long)w.lifo_hits,
                    (unsigned long long)w.ring_pops, (unsigned long long)w.stolen_tasks,
                    (unsigned long long)w.steal_ops, (unsigned long long)w.parks);
    }
    const auto spawned = m.tasks_spawned - before.tasks_spawned;
    const auto polls =
        m.total(&blitz::worker_metrics::polls) - before.total(&blitz::worker_metrics::polls);
    std::printf(
        "runtime: %llu tasks spawned, %llu polls, %llu parked workers claimed, "
        "global queue fetches %llu, I/O backend %s\n",
        (unsigned long long)spawned, (unsigned long long)polls, (unsigned long long)m.claims,
        (unsigned long long)m.total(&blitz::worker_metrics::global_fetch_ops),
        m.io_backend.c_str());
    // Every task (the burst and its n leaves) was spawned once; every leaf was polled at least
    // once and the ones that yielded twice. (The burst's own last poll may not be counted yet:
    // block_on returns as that poll completes the task, a moment before the worker counts it.)
    const bool ok = sum == n * (n - 1) / 2 && spawned == std::uint64_t(n + 1) &&
                    polls >= std::uint64_t(n + n / 64);
    std::puts(ok ? "metrics: ok" : "metrics: WRONG");
    return ok ? 0 : 1;
}
