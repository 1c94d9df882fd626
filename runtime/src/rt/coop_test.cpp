// SPDX-License-Identifier: MIT
// The public cooperative budget (issue 47, blitz/coop.hpp, B2): consume_budget yields once the
// poll's budget is spent, a task that never suspends otherwise lets its neighbours run, and an
// awaitable of one's own spends and yields through has_budget_remaining and spend_budget.
// Verdicts in polls and outcomes, never in time.

#include "blitz/coop.hpp"

#include <gtest/gtest.h>

#include <atomic>

#include "blitz/blitz.hpp"

namespace blitz {
namespace {

task<void> spend(int n) {
    for (int i = 0; i < n; ++i) co_await consume_budget();
}

// The polls a current-thread runtime with `budget` takes to drive make(n) to its end.
std::uint64_t polls_to_run(unsigned budget, task<void> (*make)(int), int n) {
    config c = config::current_thread();
    c.coop_budget_per_poll = budget;
    runtime rt(c);
    auto h = rt.spawn(make(n));
    const std::uint64_t before = rt.metrics().workers[0].polls;
    h.join();  // drives this task alone
    return rt.metrics().workers[0].polls - before;
}

std::uint64_t polls_to_spend(unsigned budget, int n) { return polls_to_run(budget, spend, n); }

TEST(CoopApi, ConsumeBudgetYieldsOncePerBudget) {
    EXPECT_EQ(polls_to_spend(128, 1000), 8u) << "ceil(1000 / 128) polls of 128 units";
    EXPECT_EQ(polls_to_spend(128, 128), 1u) << "the 128th unit is the poll's last";
    EXPECT_EQ(polls_to_spend(10, 100), 10u);
    EXPECT_EQ(polls_to_spend(0, 1000), 1u) << "budget off: never yields";
}

task<void> sleep_past(int n) {
    const instant past = now() - std::chrono::seconds(1);
    for (int i = 0; i < n; ++i) co_await sleep_until(past);
}

std::uint64_t polls_to_sleep_past(unsigned budget, int n) {
    return polls_to_run(budget, sleep_past, n);
}

// An elapsed deadline completes at once and spends budget like any ready await (Tokio's Sleep
// does): a loop over them (an interval catching up in burst mode) yields once per budget.
TEST(CoopApi, AnElapsedSleepSpendsBudgetAndYieldsWhenItIsGone) {
    EXPECT_EQ(polls_to_sleep_past(128, 1000), 8u) << "ceil(1000 / 128) polls";
    EXPECT_EQ(polls_to_sleep_past(10, 100), 10u);
    EXPECT_EQ(polls_to_sleep_past(0, 1000), 1u) << "budget off: never yields";
}

TEST(CoopApi, AnIntervalBurstingThroughMissedTicksYields) {
    runtime rt(config::current_thread());
    auto h = rt.spawn([]() -> task<void> {
        // Started a second ago: more than 1,000 ticks are due at once.
        interval iv(now() - std::chrono::seconds(1), std::chrono::milliseconds(1),
                    missed_tick_behavior::burst);
        for (int i = 0; i < 1000; ++i) co_await iv.tick();
    }());
    const std::uint64_t before = rt.metrics().workers[0].polls;
    h.join();
    EXPECT_GE(rt.metrics().workers[0].polls - before, 8u) << "the burst yields once per budget";
}

// On one worker, a task that only consumes budget would keep the worker from anything else
// were it not for the yields: the other task runs and stops it.
TEST(CoopApi, ALoopThatConsumesBudgetLetsOthersRun) {
    runtime rt(config::current_thread());
    std::atomic<bool> stop{false};
    auto spinner = rt.spawn([](std::atomic<bool>& stop) -> task<long> {
        long n = 0;
        while (!stop.load()) {
            co_await consume_budget();
            ++n;
        }
        co_return n;
    }(stop));
    auto stopper = rt.spawn([](std::atomic<bool>& stop) -> task<void> {
        stop = true;
        co_return;
    }(stop));
    stopper.join();
    EXPECT_GE(spinner.join(), 0);
}

// The pattern blitz/coop.hpp shows for an awaitable of one's own.
struct always_ready {
    using blitz_awaitable = void;  // it suspends through blitz (yield_now)
    bool yielded = false;
    bool await_ready() {
        if (!has_budget_remaining()) return false;
        spend_budget();
        return true;
    }
    void await_suspend(std::coroutine_handle<> h) {
        yielded = true;
        yield_now().await_suspend(h);
    }
    int await_resume() {
        if (yielded) spend_budget();
        return 1;
    }
};

// An awaitable of one's own whose awaiter comes from a non-member operator co_await: the task's
// pass-through applies it, as the compiler would without one.
struct ready_by_free_operator {
    using blitz_awaitable = void;
};
always_ready operator co_await(ready_by_free_operator) { return {}; }

TEST(CoopApi, ANonMemberOperatorCoAwaitIsApplied) {
    runtime rt(config::current_thread());
    auto h = rt.spawn([]() -> task<int> { co_return co_await ready_by_free_operator{}; }());
    EXPECT_EQ(h.join(), 1);
}

TEST(CoopApi, AnAwaitableOfOnesOwnSpendsAndYields) {
    config c = config::current_thread();
    c.coop_budget_per_poll = 16;
    runtime rt(c);
    auto h = rt.spawn([]() -> task<int> {
        int sum = 0;
        for (int i = 0; i < 160; ++i) {
            always_ready ready;  // a variable: g++ 12 mishandles braced temporaries in co_await
            const int v = co_await ready;
            sum += v;
        }
        co_return sum;
    }());
    const std::uint64_t before = rt.metrics().workers[0].polls;
    EXPECT_EQ(h.join(), 160);
    EXPECT_EQ(rt.metrics().workers[0].polls - before, 10u) << "160 awaits, 16 a poll";
}

// Also on a thread that drove a current-thread runtime whose last poll spent its budget.
TEST(CoopApi, OutsideATaskTheBudgetIsUnlimited) {
    config c = config::current_thread();
    c.coop_budget_per_poll = 4;
    runtime rt(c);
    rt.block_on([]() -> task<void> {
        for (int i = 0; i < 4; ++i) spend_budget();
        co_return;  // the poll ends with none left
    }());
    EXPECT_TRUE(has_budget_remaining());
    for (int i = 0; i < 1000; ++i) spend_budget();
    EXPECT_TRUE(has_budget_remaining());
}

// blitz::unconstrained (issue 47, item 4): the budget is off in every poll of the wrapped task,
// across its suspensions, and back on once it returns. Counted in polls on a current-thread
// runtime that runs this task alone.
std::uint64_t polls_of(task<void> body) {
    config c = config::current_thread();
    c.coop_budget_per_poll = 128;
    runtime rt(c);
    auto h = rt.spawn(std::move(body));
    const std::uint64_t before = rt.metrics().workers[0].polls;
    h.join();
    return rt.metrics().workers[0].polls - before;
}

task<void> yield_then_spend(int n) {
    co_await yield_now();  // a second poll: the budget must still be off in it
    co_await spend(n);
}

task<void> unconstrained_then_spend(int n) {
    co_await unconstrained(spend(n));
    co_await spend(n);  // constrained again: yields every 128 units
}

TEST(CoopApi, UnconstrainedNeverYieldsForBudgetInAnyPoll) {
    EXPECT_EQ(polls_of(spend(1000)), 8u) << "the constrained baseline";
    EXPECT_EQ(polls_of(unconstrained(spend(1000))), 1u);
    EXPECT_EQ(polls_of(unconstrained(yield_then_spend(1000))), 2u)
        << "one poll for the yield, one for all 1,000 units";
    EXPECT_EQ(polls_of(unconstrained_then_spend(1000)), 8u)
        << "1,000 units unconstrained in the first poll, then 128 a poll again";
}

TEST(CoopApi, UnconstrainedAsASpawnedRootAndNested) {
    EXPECT_EQ(polls_of([]() -> task<void> {
                  co_await unconstrained(unconstrained(spend(500)));
                  co_await spend(500);  // the outer scope put the budget back on
              }()),
              4u);
    runtime rt(config::current_thread());
    EXPECT_EQ(rt.block_on(unconstrained([]() -> task<int> { co_return 7; }())), 7);
}

}  // namespace
}  // namespace blitz
