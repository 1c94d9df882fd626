// SPDX-License-Identifier: MIT
// Spinning before parking (config::park_spin): the last searcher keeps searching for a while
// before it parks, and still counts as a searcher while it spins. So work queued meanwhile
// wakes nobody (I3) and the spinner takes it itself; the futex wake of a parked worker is what
// the spin saves. The hook at the spin's start queues a task from a plain thread at exactly
// that moment, so what the test checks does not depend on timing.

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

TEST(ParkSpin, WorkQueuedWhileTheLastSearcherSpinsWakesNobodyAndIsTakenByTheSpinner) {
    std::atomic<runtime*> target{nullptr};
    std::atomic<bool> armed{false}, pushed{false};
    std::atomic<std::uint64_t> claims_before{0};
    std::atomic<int> spinner{-1}, ran_on{-1};
    join_handle<void> queued;
    config c;
    c.workers = 2;
    c.park_spin = 1ms;
    c.park_timeout = 10s;  // no timeout wake can stand in for the spinner
    c.debug.on_park_spin = [&](unsigned index) {
        // Only while the other worker is parked: a claim would have someone to wake.
        detail::idle_state& idle = detail::current_worker()->sched().idle();
        const std::uint64_t other = std::uint64_t{1} << (1 - index);
        if (idle.bitmap_word(0) != other || !armed.exchange(false)) return;
        claims_before = target.load()->metrics().claims;
        spinner = static_cast<int>(index);
        std::thread([&] {
            queued = target.load()->spawn([](std::atomic<int>& ran_on) -> task<void> {
                ran_on = static_cast<int>(detail::current_worker()->index());
                co_return;
            }(ran_on));
        }).join();
        pushed.store(true, std::memory_order_release);
    };
    runtime rt(c);
    target = &rt;
    // Each spawn from here wakes one worker; it runs the task, searches, finds nothing and
    // spins as the last searcher while the other worker sleeps. The runtime comes to rest
    // after each: a spawn from here while the hook runs would be more work for the spinner to
    // find, and its wake of the other worker for the rest (I4) a claim this test is not about.
    workloads::spawn_until_fired(rt, armed, pushed);
    queued.join();
    const runtime_metrics m = workloads::settle(rt);
    EXPECT_EQ(m.claims, claims_before.load()) << "a push during the spin woke a parked worker";
    EXPECT_EQ(ran_on.load(), spinner.load()) << "the spinner did not take the queued task";
    EXPECT_GE(m.total(&worker_metrics::park_spin_hits), 1u);
    EXPECT_EQ(m.num_searching, 0u);  // I1: the spinner stopped searching when it took the task
    EXPECT_EQ(m.total(&worker_metrics::unparks_timeout), 0u);
}

// A spin that runs out parks through the usual protocol: at rest nobody searches and every
// worker is parked, and spins that found nothing are counted apart from those that did.
TEST(ParkSpin, ASpinThatRunsOutParksAsUsual) {
    config c;
    c.workers = 2;
    c.park_spin = 20us;
    c.park_timeout = 10s;
    runtime rt(c);
    for (int i = 0; i < 20; ++i) {
        EXPECT_EQ(rt.spawn([]() -> task<int> { co_return 3; }()).join(), 3);
        std::this_thread::sleep_for(200us);  // longer than the spin, which mostly runs out
    }
    const runtime_metrics m = workloads::settle(rt);
    EXPECT_EQ(m.num_searching, 0u);
    EXPECT_EQ(m.num_parked, 2u);
    EXPECT_GE(m.total(&worker_metrics::park_spins), 1u);
    // The last spin had nothing to find: it ran out, and its worker parked.
    EXPECT_LT(m.total(&worker_metrics::park_spin_hits), m.total(&worker_metrics::park_spins));
}

}  // namespace
}  // namespace blitz
