// SPDX-License-Identifier: MIT
// Model: the parker (I5). An unpark is never lost: it wakes a thread asleep in the futex or
// leaves the token for the next park; a park that returns the token sees everything the
// unparker wrote before unpark (release/acquire on the word itself); a timed park that returns
// without the token leaves it to be consumed later, never dropped.

#include <gtest/gtest.h>

#include <chrono>

#include "model.hpp"
#include "model_report.hpp"
#include "sched/parker.hpp"

namespace blitz::model {
namespace {

using namespace std::chrono_literals;

// One parker, one unparker. `timeout` bounds the park (virtual time: a timed park may time out
// at any point); `wake_skipped` is I5's own negative control (the futex wake is left out).
std::function<void()> parker_body(std::chrono::nanoseconds timeout, bool wake_skipped,
                                  int parks = 1) {
    return [=] {
        detail::parker p;
        p.set_fault_skip_futex_wake(wake_skipped);
        atomic<int> data{0};
        bool got = false;
        thread unparker([&] {
            data.store(1, std::memory_order_relaxed);
            p.unpark();
        });
        for (int i = 0; i < parks && !got; ++i) {
            if (p.park(timeout)) {
                got = true;
                // The unparker's write before unpark() is visible after park() returns true.
                BLITZ_MODEL_CHECK(data.load(std::memory_order_relaxed) == 1);
            }
        }
        unparker.join();
        // Not lost: either a park took the token or it is still there.
        BLITZ_MODEL_CHECK(got || p.try_consume());
    };
}

constexpr auto park_forever = std::chrono::nanoseconds(std::chrono::hours(1));

// The park's timeout is a safety net in the runtime; here it never fires (untimed()), so a park
// that the unpark fails to wake is a deadlock rather than a late return.

TEST(ModelParker, AnUnparkWakesTheParkOrWaitsForIt) {
    expect_holds("parker: park (timeouts off) against unpark", untimed(),
                 parker_body(park_forever, false));
}

TEST(ModelParker, ATimedParkNeverDropsTheToken) {
    expect_holds("parker: timed park (may time out) against unpark, twice", options{},
                 parker_body(1ms, false, 2));
}

TEST(ModelParker, ControlSkippedFutexWakeIsCaught) {
    expect_caught("parker control: unpark skips the futex wake", untimed(),
                  parker_body(park_forever, true));
}

TEST(ModelParker, ControlRelaxedUnparkIsCaught) {
    options o = untimed();
    o.weaken = "parker_unpark";
    expect_caught("parker control: unpark's exchange relaxed", o, parker_body(park_forever, false));
}

}  // namespace
}  // namespace blitz::model
