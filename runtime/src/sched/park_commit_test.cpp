// SPDX-License-Identifier: MIT
// The idle protocol's park commit in the real runtime (I4, amended by issue 19): the idle model
// found that a park cancelled by the last searcher's final check came back as a non-searcher,
// so the first of two tasks it found led to no wake and the second waited for a park timeout.
// Here the hook before the park commit pushes two tasks from a plain thread at exactly that
// moment (a searcher exists, so the pushes wake nobody); the first task keeps its worker busy
// until the second has run, which only the other, parked, worker can do.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "blitz/blitz.hpp"
#include "blitz/testing.hpp"
#include "blitz_testing/settle.hpp"
#include "sched/idle_state.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

TEST(ParkCommit, TwoTasksFoundByTheFinalCheckWakeTheParkedWorker) {
    std::atomic<runtime*> target{nullptr};
    std::atomic<bool> armed{false}, pushed{false}, second_ran{false};
    join_handle<void> first, second;
    config c;
    c.workers = 2;
    c.global_batch_min = 1;  // a fetch takes one of the two (two workers: half the queue)
    c.park_timeout = 2s;     // the stranded task's wait if the wake is missing (then counted)
    c.debug.before_park_commit = [&](unsigned index) {
        // Only the last searcher, going to sleep while the other worker sleeps already.
        detail::idle_state& idle = detail::current_worker()->sched().idle();
        const std::uint64_t other = std::uint64_t{1} << (1 - index);
        if (idle.num_searching() != 1 || idle.bitmap_word(0) != other || !armed.exchange(false))
            return;
        std::thread([&] {
            first = target.load()->spawn([](std::atomic<bool>& ran) -> task<void> {
                // Keeps this worker until the other task has run elsewhere.
                while (!ran.load(std::memory_order_acquire)) std::this_thread::yield();
                co_return;
            }(second_ran));
            second = target.load()->spawn([](std::atomic<bool>& ran) -> task<void> {
                ran.store(true, std::memory_order_release);
                co_return;
            }(second_ran));
        }).join();
        pushed.store(true, std::memory_order_release);
    };
    runtime rt(c);
    target = &rt;
    // Each spawn from here wakes one worker; it runs the task and, as the last searcher, wakes
    // the other; the second of them to park finds the hook armed.
    workloads::spawn_until_fired(rt, armed, pushed);
    first.join();
    second.join();
    const runtime_metrics m = workloads::settle(rt);
    EXPECT_EQ(m.total(&worker_metrics::timeout_wakes_found_work), 0u)
        << "the second task waited for the parked worker's timeout";
    EXPECT_EQ(m.total(&worker_metrics::unparks_timeout), 0u);
}

}  // namespace
}  // namespace blitz
