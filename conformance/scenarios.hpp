#pragma once
// Scenarios shared by the unit tests and the conformance checkers.

#include <atomic>
#include <chrono>
#include <thread>

#include "blitz/blitz.hpp"
#include "sched/worker.hpp"
#include "settle.hpp"

namespace blitz::workloads {

struct park_window_result {
    runtime_metrics metrics;  // read once the runtime settled
    bool lifo_stayed_empty;   // L4: the spawn in the window bypassed the worker's LIFO slot
};

// I4 at the protocol's narrowest point (1 worker): a task is spawned on the worker itself while
// it is the last searcher and about to park, so the producer sees a searcher and issues no wake.
// Only the last searcher's final check can find it; `skip_check` is the fault that removes that
// check, after which the task waits for the park timeout (counted as a timeout wake that found
// work). The hook is armed from a task on the worker, so nothing from this thread can rescue the
// task afterwards (join() pushes nothing).
inline park_window_result park_window(bool skip_check, std::chrono::nanoseconds park_timeout) {
    std::atomic<runtime*> target{nullptr};
    std::atomic<bool> armed{false}, spawned{false}, lifo_empty{true};
    join_handle<int> late;
    config c;
    c.workers = 1;
    c.park_timeout = park_timeout;
    c.debug.skip_last_searcher_check = skip_check;
    c.debug.before_park_commit = [&](unsigned) {
        if (armed.exchange(false)) {
            late = target.load()->spawn([]() -> task<int> { co_return 42; }());
            if (detail::current_worker()->lifo_peek() != nullptr) lifo_empty = false;
            spawned.store(true, std::memory_order_release);
        }
    };
    runtime rt(c);
    target = &rt;
    rt.block_on([](std::atomic<bool>& a) -> task<void> {
        a = true;
        co_return;
    }(armed));
    while (!spawned.load(std::memory_order_acquire)) std::this_thread::yield();
    late.join();
    // A timeout wake that found work is counted at the end of that tick, after the task (and so
    // join()) completed: read the counters once the worker has parked again.
    return {settle(rt), lifo_empty.load()};
}

}  // namespace blitz::workloads
