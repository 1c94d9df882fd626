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
#include "sched/spin_budget.hpp"
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
    c.park_spin_adaptive = false;  // spin at every park, from the first
    c.park_timeout = 10s;          // no timeout wake can stand in for the spinner
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
    c.park_spin_adaptive = false;
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

// ---- the adaptive budget (config::park_spin_adaptive), as a rule on idle spells ----

using detail::spin_budget;
constexpr std::int64_t step = spin_budget::start_step_ns;

TEST(SpinBudget, StartsAtZeroAndGrowsByDoublingOnShortMissesInARow) {
    spin_budget b(50us, /*adaptive=*/true);
    EXPECT_TRUE(b.learns());
    EXPECT_EQ(b.budget_ns(), 0);  // no spin until spells show one would have paid
    b.spell_ended(30'000, true);
    EXPECT_EQ(b.budget_ns(), 0);  // one short miss is not yet a pattern
    b.spell_ended(30'000, true);
    EXPECT_EQ(b.budget_ns(), step);
    b.spell_ended(30'000, true);
    EXPECT_EQ(b.budget_ns(), 2 * step);
    b.spell_ended(30'000, true);
    EXPECT_EQ(b.budget_ns(), 4 * step);
    b.spell_ended(30'000, true);  // within 32 us: the next spin would catch such a spell
    EXPECT_EQ(b.budget_ns(), 8 * step);
    b.spell_ended(49'000, true);
    EXPECT_EQ(b.budget_ns(), 50'000);  // 64 us, held at the cap
    b.spell_ended(49'000, true);
    EXPECT_EQ(b.budget_ns(), 50'000);
}

TEST(SpinBudget, SpellsThatAlternateShortAndLongNeverStartASpin) {
    spin_budget b(50us, true);
    for (int i = 0; i < 100; ++i) {
        b.spell_ended(30'000, true);     // the reply to a request, soon
        b.spell_ended(1'000'000, true);  // then a long wait
    }
    EXPECT_EQ(b.budget_ns(), 0);
    // A caught spell does not break a run of short misses; a long one does.
    b.spell_ended(30'000, true);
    b.spell_ended(30'000, true);
    ASSERT_EQ(b.budget_ns(), step);
    b.spell_ended(1'000, true);  // caught
    b.spell_ended(30'000, true);
    EXPECT_EQ(b.budget_ns(), 2 * step);
}

TEST(SpinBudget, ASpellTheSpinCaughtLeavesTheBudgetAlone) {
    spin_budget b(50us, true);
    for (int i = 0; i < 3; ++i) b.spell_ended(10'000, true);
    ASSERT_EQ(b.budget_ns(), 2 * step);
    b.spell_ended(2 * step, true);  // the spin found the work at its very end
    b.spell_ended(1'000, true);
    EXPECT_EQ(b.budget_ns(), 2 * step);
}

TEST(SpinBudget, LongSpellsAndTimeoutsHalveItDownToZero) {
    spin_budget b(64us, true);
    for (int i = 0; i < 6; ++i) b.spell_ended(63'000, true);
    ASSERT_EQ(b.budget_ns(), 64'000);
    b.spell_ended(65'000, true);  // longer than the cap: spinning for it was waste
    EXPECT_EQ(b.budget_ns(), 32'000);
    b.spell_ended(1'000, false);  // a park timeout, however short the park timeout is
    EXPECT_EQ(b.budget_ns(), 16'000);
    b.spell_ended(10'000'000, true);
    b.spell_ended(10'000'000, true);
    EXPECT_EQ(b.budget_ns(), step);
    b.spell_ended(10'000'000, true);  // half the step: not worth a spin
    EXPECT_EQ(b.budget_ns(), 0);
    b.spell_ended(10'000'000, false);
    EXPECT_EQ(b.budget_ns(), 0);
}

TEST(SpinBudget, ACapBelowTheStepIsTheOnlyBudgetAndFixedModeNeverMoves) {
    spin_budget small(2us, true);
    small.spell_ended(1'500, true);
    small.spell_ended(1'500, true);
    EXPECT_EQ(small.budget_ns(), 2'000);
    small.spell_ended(3'000, true);
    EXPECT_EQ(small.budget_ns(), 0);

    spin_budget fixed(20us, false);
    EXPECT_EQ(fixed.budget_ns(), 20'000);
    fixed.spell_ended(10'000'000, false);
    fixed.spell_ended(1'000, true);
    EXPECT_EQ(fixed.budget_ns(), 20'000);

    spin_budget off(0ns, true);
    EXPECT_FALSE(off.learns());
    off.spell_ended(1'000, true);
    EXPECT_EQ(off.budget_ns(), 0);
}

// ---- the adaptive budget in a runtime ----

std::uint64_t largest_budget(const runtime_metrics& m) {
    std::uint64_t most = 0;
    for (const worker_metrics& w : m.workers) most = std::max(most, w.park_spin_budget_ns);
    return most;
}

// A plain thread that spawns and joins in a loop leaves the runtime idle for a few tens of us
// at a time, far below a 1 ms cap: the budget grows from 0 and the last searcher starts to spin,
// then catches spawns in its spin. Nothing here is timed: the loop runs until the counters show
// it (or gives up after far more rounds than the rule needs).
TEST(ParkSpin, AnAdaptiveBudgetGrowsWhileWorkComesInShortGapsAndTheSpinsThenCatchIt) {
    config c;
    c.workers = 2;
    c.park_spin = 1ms;
    c.park_timeout = 10s;  // only the spells' ends move the budget
    runtime rt(c);
    EXPECT_EQ(largest_budget(rt.metrics()), 0u);  // it starts at 0: no spin yet
    runtime_metrics m;
    int rounds = 0;
    for (; rounds < 20'000; ++rounds) {
        EXPECT_EQ(rt.spawn([]() -> task<int> { co_return 5; }()).join(), 5);
        m = rt.metrics();
        if (largest_budget(m) > 0 && m.total(&worker_metrics::park_spin_hits) >= 3) break;
    }
    EXPECT_GT(largest_budget(m), 0u) << "after " << rounds << " spawns";
    EXPECT_GE(m.total(&worker_metrics::park_spin_hits), 3u) << "after " << rounds << " spawns";
}

// Idle spells that end by the park timeout halve the budget until the workers park at once:
// an idle runtime stops spinning. The park timeout is shorter than the cap, so a timed-out
// spell is shorter than the cap too: only its having found no work makes it shrink the budget.
TEST(ParkSpin, AnAdaptiveBudgetFallsToZeroWhenTheRuntimeStaysIdle) {
    config c;
    c.workers = 2;
    c.park_spin = 1ms;
    c.park_timeout = 200us;
    runtime rt(c);
    // The budget seen grow is kept: read again later it may already have fallen back to 0 (a
    // few park timeouts of 200 us halve a small budget away; a loaded TSan run took that long
    // between two reads, and the check failed).
    std::uint64_t grew = 0;
    for (int i = 0; i < 20'000 && grew == 0; ++i) {
        EXPECT_EQ(rt.spawn([]() -> task<int> { co_return 5; }()).join(), 5);
        grew = largest_budget(rt.metrics());
    }
    ASSERT_GT(grew, 0u) << "the budget never grew";
    // Each park timeout halves it: from at most 1 ms that is 9 timeouts to 0 per worker.
    for (int i = 0; i < 20'000 && largest_budget(rt.metrics()) > 0; ++i) {
        std::this_thread::sleep_for(1ms);
    }
    const runtime_metrics m = workloads::settle(rt);
    EXPECT_EQ(largest_budget(m), 0u);
    EXPECT_EQ(m.num_searching, 0u);
}

}  // namespace
}  // namespace blitz
