// SPDX-License-Identifier: MIT
// Blocking work and plain threads. spawn_blocking runs a function that would block a worker (a
// blocking syscall, a legacy library, a long computation) on the runtime's blocking pool, so
// the workers keep running tasks meanwhile. Code outside the runtime (plain std::threads, a
// callback from a C library) uses the same pool through runtime::spawn_blocking and joins the
// handle, or hands async work to the runtime with runtime::spawn. Exit status 0 when every
// result is right.
//
//   build/release/example_blocking

#include <atomic>
#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

// Stands in for a blocking call: a slow computation.
std::uint64_t slow_hash(std::uint64_t x) {
    for (int i = 0; i < 2'000'000; ++i) x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

// From a task: co_await the handle. The worker runs other tasks while the pool computes.
blitz::task<std::uint64_t> hash_in_task(std::uint64_t x) {
    co_return co_await blitz::spawn_blocking([x] { return slow_hash(x); });
}

// A task that counts its own steps while the blocking jobs run on other threads.
blitz::task<int> keep_ticking(std::atomic<bool>& stop) {
    int ticks = 0;
    while (!stop.load()) {
        co_await blitz::sleep(1ms);
        ++ticks;
    }
    co_return ticks;
}

int main() {
    blitz::config c;
    c.workers = 2;
    blitz::runtime rt(c);
    int bad = 0;

    std::atomic<bool> stop{false};
    auto ticker = rt.spawn(keep_ticking(stop));

    // Four plain threads, each using the runtime without being part of it.
    std::vector<std::uint64_t> from_threads(4), from_tasks(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&rt, &from_threads, &from_tasks, i] {
            // Blocking work on the pool, joined from this thread.
            from_threads[i] = rt.spawn_blocking([i] { return slow_hash(i); }).join();
            // Async work on the workers, joined from this thread.
            from_tasks[i] = rt.spawn(hash_in_task(i)).join();
        });
    }
    for (auto& t : threads) t.join();
    stop.store(true);
    const int ticks = ticker.join();

    for (int i = 0; i < 4; ++i)
        bad += from_threads[i] != slow_hash(i) || from_tasks[i] != slow_hash(i);
    const blitz::runtime_metrics m = rt.metrics();
    std::printf(
        "blocking: 8 jobs on %llu pool threads (peak %llu); a task ticked %d times "
        "meanwhile\n",
        (unsigned long long)m.blocking_spawned_threads, (unsigned long long)m.blocking_peak_threads,
        ticks);
    bad += m.blocking_spawned_threads == 0;
    std::puts(bad == 0 ? "blocking: ok" : "blocking: WRONG");
    return bad == 0 ? 0 : 1;
}
