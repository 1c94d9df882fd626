// SPDX-License-Identifier: MIT
// Model: the timer driver's arm, disarm and fire (T1, T6, T7's driver side) on a paused clock,
// each from its own thread. The waker given to arm is used exactly once (woken by the firing,
// or dropped by a disarm or by an arm that was refused), a disarm that reports success means
// no wake comes, and a wake means the slot reads fired.

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

}  // namespace
}  // namespace blitz::model
