// SPDX-License-Identifier: MIT
// timer_driver's shards: arms land on the calling worker's wheel, cancels follow the slot to its
// own shard, any thread fires any shard's due timers, and the runtime's earliest expiry is the
// least of the shards' (issue 47, item 7).

#include "time/timer_driver.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"

namespace blitz::detail {
namespace {

using namespace std::chrono_literals;

struct counting_target {
    std::atomic<int> wakes{0};
    std::atomic<int> drops{0};
};
void count_wake(void* p) noexcept { static_cast<counting_target*>(p)->wakes.fetch_add(1); }
void count_drop(void* p) noexcept { static_cast<counting_target*>(p)->drops.fetch_add(1); }
void* no_clone(void* p) noexcept { return p; }
constexpr waker_vtable counting_vtable{count_wake, count_wake, no_clone, count_drop};
waker counting(counting_target& t) { return waker(&t, &counting_vtable); }

TEST(TimerShards, OnePerWorkerUpToTheCap) {
    EXPECT_EQ(timer_driver(true, timer_driver::early_fault::none, 0).shards(), 1u);
    EXPECT_EQ(timer_driver(true, timer_driver::early_fault::none, 1).shards(), 1u);
    EXPECT_EQ(timer_driver(true, timer_driver::early_fault::none, 8).shards(), 8u);
    EXPECT_EQ(timer_driver(true, timer_driver::early_fault::none, 4096).shards(),
              timer_driver::max_shards);
}

TEST(TimerShards, ASlotRemembersItsShardAndACancelFromAnotherThreadUnlinksIt) {
    timer_driver d(/*paused=*/true, timer_driver::early_fault::none, 4);
    counting_target t[4];
    timer_slot s[4];
    for (unsigned i = 0; i < 4; ++i) {
        ASSERT_TRUE(d.arm_on(i, s[i], d.now() + 5ms, counting(t[i])));
        EXPECT_EQ(s[i].shard, i);
    }
    EXPECT_EQ(d.pending(), 4u);
    // The cancels come from a thread bound to no shard (tasks that moved): whichever shard that
    // thread maps to, three of the four slots live elsewhere, and each cancel takes its own.
    std::thread other([&] {
        for (auto& slot : s) EXPECT_TRUE(d.disarm(slot));
    });
    other.join();
    EXPECT_EQ(d.pending(), 0u);
    EXPECT_EQ(d.earliest_tick(), UINT64_MAX);
    d.advance(10ms);
    for (unsigned i = 0; i < 4; ++i) {
        EXPECT_EQ(t[i].drops.load(), 1) << "shard " << i;
        EXPECT_EQ(t[i].wakes.load(), 0) << "shard " << i;
    }
    EXPECT_EQ(d.lock_waits(), 0u);
}

TEST(TimerShards, FiringFromOneShardFiresEveryShardsDueTimers) {
    timer_driver d(/*paused=*/true, timer_driver::early_fault::none, 4);
    counting_target t[4];
    timer_slot s[4];
    for (unsigned i = 0; i < 4; ++i) ASSERT_TRUE(d.arm_on(i, s[i], d.now() + 3ms, counting(t[i])));
    d.advance(3ms);  // advance fires from whichever shard this thread maps to
    for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(t[i].wakes.load(), 1) << "shard " << i;
    EXPECT_EQ(d.fired_total(), 4u);
    EXPECT_EQ(d.earliest_tick(), UINT64_MAX);
}

TEST(TimerShards, TheEarliestIsTheLeastOfTheShardsAfterArmsCancelsAndFires) {
    timer_driver d(/*paused=*/true, timer_driver::early_fault::none, 3);
    counting_target t;
    timer_slot early, late, later;
    ASSERT_TRUE(d.arm_on(0, late, d.now() + 20ms, counting(t)));
    const std::uint64_t late_tick = d.earliest_tick();
    ASSERT_TRUE(d.arm_on(1, early, d.now() + 5ms, counting(t)));
    const std::uint64_t early_tick = d.earliest_tick();
    EXPECT_LT(early_tick, late_tick);
    // An arm later than its shard's earliest leaves the runtime's earliest alone.
    ASSERT_TRUE(d.arm_on(1, later, d.now() + 30ms, counting(t)));
    EXPECT_EQ(d.earliest_tick(), early_tick);
    ASSERT_TRUE(d.disarm(early));
    EXPECT_EQ(d.earliest_tick(), late_tick);  // a cancel updates its shard at once
    ASSERT_TRUE(d.disarm(late));
    EXPECT_EQ(d.earliest_tick(), late_tick + 10);  // `later`, on shard 1
    ASSERT_TRUE(d.disarm(later));
    EXPECT_EQ(d.earliest_tick(), UINT64_MAX);
    // advance_to_next moves the clock to the armed timer, not to a cancelled earlier one.
    ASSERT_TRUE(d.arm_on(2, late, d.now() + 20ms, counting(t)));
    ASSERT_TRUE(d.arm_on(0, early, d.now() + 5ms, counting(t)));
    ASSERT_TRUE(d.disarm(early));
    const auto before = d.now();
    ASSERT_TRUE(d.advance_to_next());
    EXPECT_EQ(d.now() - before, 20ms);
    EXPECT_EQ(t.wakes.load(), 1);
    EXPECT_EQ(d.earliest_tick(), UINT64_MAX);
}

TEST(TimerShards, ArmsAndCancelsOnOwnShardsFromManyThreadsNeverWait) {
    // Each thread arms and cancels on a shard of its own: no lock is ever found taken.
    constexpr unsigned threads = 4;
    timer_driver d(/*paused=*/false, timer_driver::early_fault::none, threads);
    std::vector<std::thread> ts;
    std::atomic<int> bad{0};
    for (unsigned i = 0; i < threads; ++i) {
        ts.emplace_back([&, i] {
            counting_target t;
            for (int k = 0; k < 20'000; ++k) {
                timer_slot s;
                if (!d.arm_on(i, s, d.now() + std::chrono::milliseconds(1 + k % 500), counting(t)))
                    bad.fetch_add(1);
                else if (!d.disarm(s))
                    bad.fetch_add(1);
            }
        });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(d.pending(), 0u);
    EXPECT_EQ(d.lock_waits(), 0u);
}

TEST(TimerShards, EachWorkerOfARuntimeArmsOnItsOwnShard) {
    config c;
    c.workers = 4;
    runtime rt(c);
    // Sleeps on every worker, cancelled by a select the sleep loses: the arms and the cancels
    // are the workers' own; the metric says how many found the lock taken.
    std::vector<join_handle<void>> hs;
    for (int i = 0; i < 200; ++i) {
        hs.push_back(rt.spawn([]() -> task<void> {
            for (int k = 0; k < 50; ++k) {
                (void)co_await timeout(1h, yield_now());
            }
        }()));
    }
    for (auto& h : hs) h.join();
    const auto m = rt.metrics();
    EXPECT_EQ(m.timers_pending, 0u);
    EXPECT_EQ(m.timers_fired, 0u);
    // Informative: tasks move between workers (stealing), so a cancel can cross shards; the
    // count is reported, never asserted to be zero here.
    RecordProperty("timer_lock_waits", std::to_string(m.timer_lock_waits));
}

TEST(TimerShards, PinnedTasksArmingOnEveryWorkerNeverWaitForATimerLock) {
    // Tasks that never move arm and cancel on their own worker's shard only, and a tick takes a
    // shard's lock only when one of its timers is due (never, with 1 h timeouts): the new path
    // waits for no lock, counted exactly (one wheel under one lock made these workers meet).
    config c;
    c.workers = 4;
    runtime rt(c);
    std::vector<join_handle<void>> hs;
    for (unsigned w = 0; w < c.workers; ++w) {
        for (int i = 0; i < 4; ++i) {
            hs.push_back(rt.spawn_pinned(w, []() -> task<void> {
                for (int k = 0; k < 2'000; ++k) (void)co_await timeout(1h, yield_now());
            }()));
        }
    }
    for (auto& h : hs) h.join();
    const auto m = rt.metrics();
    EXPECT_EQ(m.timers_fired, 0u);
    EXPECT_EQ(m.timers_pending, 0u);
    EXPECT_EQ(m.timer_lock_waits, 0u);
}

}  // namespace
}  // namespace blitz::detail
