// SPDX-License-Identifier: MIT
// Model: the timer driver's arm, disarm and fire (T1, T6, T7's driver side) on a paused clock,
// each from its own thread, on one shard and across two (issue 47, item 7: a task that armed on
// one worker's shard is cancelled while another worker fires every shard). The waker given to
// arm is used exactly once (woken by the firing, or dropped by a disarm or by an arm that was
// refused), a disarm that reports success means no wake comes, a wake means the slot reads
// fired, and once everything fired no shard counts a timer or an expiry.
//
// Not modelled: the shards' next_tick words are read by parking workers in a store-load pattern
// (class comment of timer_driver); the checker's seq_cst operations synchronize through one
// global clock, so a weakened store there would not be caught. T7's conformance control (an arm
// that wakes nobody) covers that side.

#include <gtest/gtest.h>

#include <chrono>

#include "blitz/testing/fault_injection.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task/alloc_stats.hpp"
#include "time/timer_driver.hpp"

namespace blitz::model {
namespace {

using namespace std::chrono_literals;
using detail::timer_driver;
using detail::timer_slot;

// A waker that counts what is done with it.
struct counting_target {
    atomic<int> wakes{0};
    atomic<int> drops{0};
};

void count_wake(void* p) noexcept {
    static_cast<counting_target*>(p)->wakes.fetch_add(1, std::memory_order_relaxed);
}
void count_drop(void* p) noexcept {
    static_cast<counting_target*>(p)->drops.fetch_add(1, std::memory_order_relaxed);
}
void* no_clone(void* p) noexcept {
    BLITZ_MODEL_CHECK(false);  // the driver never copies a waker
    return p;
}
constexpr waker_vtable counting_vtable{count_wake, count_wake, no_clone, count_drop};

std::function<void()> timer_body() {
    return [] {
        timer_driver d(/*paused=*/true);
        timer_slot slot;
        counting_target target;
        bool armed = false, disarmed = false;
        const auto deadline = d.now() + 1ms;
        thread arming([&] { armed = d.arm(slot, deadline, waker(&target, &counting_vtable)); });
        thread disarming([&] { disarmed = d.disarm(slot); });
        thread firing([&] { d.advance(2ms); });
        arming.join();
        disarming.join();
        firing.join();
        d.advance(10ms);  // whatever is still armed fires now
        const int wakes = target.wakes.load(std::memory_order_relaxed);
        const int drops = target.drops.load(std::memory_order_relaxed);
        BLITZ_MODEL_CHECK(wakes + drops == 1);    // the waker is used exactly once
        BLITZ_MODEL_CHECK(!(disarmed && wakes));  // a successful disarm means no wake
        if (wakes) BLITZ_MODEL_CHECK(slot.fired.load(std::memory_order_acquire));
        if (!armed) BLITZ_MODEL_CHECK(drops == 1 && !disarmed);  // refused: never linked
    };
}

// Two shards: one thread arms on shard 1 and then cancels (a task that moved would cancel from
// another worker: disarm takes the slot's shard whoever calls it), another arms on shard 0, and
// a third fires every shard.
std::function<void()> sharded_body() {
    return [] {
        timer_driver d(/*paused=*/true, timer_driver::early_fault::none, /*workers=*/2);
        timer_slot moved, stays;
        counting_target t_moved, t_stays;
        bool armed = false, disarmed = false, armed_stays = false;
        const auto deadline = d.now() + 1ms;
        thread cancelling([&] {
            armed = d.arm_on(1, moved, deadline, waker(&t_moved, &counting_vtable));
            if (armed) disarmed = d.disarm(moved);
        });
        thread arming(
            [&] { armed_stays = d.arm_on(0, stays, deadline, waker(&t_stays, &counting_vtable)); });
        thread firing([&] { d.advance(2ms); });
        cancelling.join();
        arming.join();
        firing.join();
        d.advance(10ms);
        const int wakes = t_moved.wakes.load(std::memory_order_relaxed);
        const int drops = t_moved.drops.load(std::memory_order_relaxed);
        BLITZ_MODEL_CHECK(wakes + drops == 1);
        BLITZ_MODEL_CHECK(!(disarmed && wakes));
        if (armed && !disarmed) BLITZ_MODEL_CHECK(wakes == 1);  // fired before the cancel
        const int stays_wakes = t_stays.wakes.load(std::memory_order_relaxed);
        const int stays_drops = t_stays.drops.load(std::memory_order_relaxed);
        BLITZ_MODEL_CHECK(stays_wakes + stays_drops == 1);
        if (armed_stays) BLITZ_MODEL_CHECK(stays_wakes == 1);
        BLITZ_MODEL_CHECK(d.pending() == 0);
        BLITZ_MODEL_CHECK(d.earliest_tick() == UINT64_MAX);
    };
}

TEST(ModelTimer, ArmDisarmAndFireFromThreeThreads) {
    make_runtime_statics();
    expect_holds("timer driver: arm, disarm and fire racing", options{}, timer_body());
}

TEST(ModelTimer, ControlDisarmClaimingAFiredTimerIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "timer_disarm_fired";
    expect_caught("timer control: disarm reports success for a fired timer", o, timer_body());
}

TEST(ModelTimer, ShardedCancelAndFireFromThreeThreads) {
    make_runtime_statics();
    expect_holds("timer driver: a cancel on one shard while every shard fires", options{},
                 sharded_body());
}

TEST(ModelTimer, ControlShardedDisarmClaimingAFiredTimerIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "timer_disarm_fired";
    expect_caught("timer control (two shards): disarm reports success for a fired timer", o,
                  sharded_body());
}

TEST(ModelTimer, ControlDisarmOnTheWrongShardIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "timer_disarm_wrong_shard";
    expect_caught("timer control: disarm locks the calling side's shard, not the slot's", o,
                  sharded_body());
}

}  // namespace
}  // namespace blitz::model
