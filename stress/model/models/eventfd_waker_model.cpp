// SPDX-License-Identifier: MIT
// Model: the I/O backends' eventfd waker (io/backend.hpp; issue 44). Its pending word lets
// many wakes share one eventfd write; the driver drains the eventfd and then clears the word.
// A wake that rides on a write the driver is draining is absorbed, so its target must see what
// the waker published before waking (a parker's token) when it looks after the drain: no wake
// is lost, whichever way the wake and the drain interleave. The eventfd itself is the kernel's
// (a real, non-blocking descriptor; its reads and writes are not scheduling points, each is one
// indivisible step of the thread that makes it).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>

#include "io/backend.hpp"
#include "model.hpp"
#include "model_report.hpp"

namespace blitz::model {
namespace {

// True when the eventfd holds a count: the driver's next wait returns at once.
bool readable(int fd) {
    std::uint64_t v = 0;
    return ::read(fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v);
}

// A driver that saw the eventfd readable drains it, then looks for a token (as a worker that
// slept in the driver checks its parker); a waker publishes a token, then wakes. `earlier`
// wakes first made the eventfd readable. The wake must not be lost: the driver saw the token,
// or the eventfd is readable again for its next wait.
std::function<void()> waker_body(int earlier) {
    return [=] {
        detail::io_syscall_counts counts;
        detail::eventfd_waker w;
        for (int i = 0; i < earlier; ++i) w.wake(counts);
        atomic<int> token{0};
        bool saw = false;
        thread driver([&] {
            w.drain(counts);
            saw = token.load(std::memory_order_relaxed) == 1;
        });
        thread waker([&] {
            token.store(1, std::memory_order_relaxed);  // published by the wake's RMW
            w.wake(counts);
        });
        driver.join();
        waker.join();
        BLITZ_MODEL_CHECK(saw || readable(w.fd()));
    };
}

TEST(ModelEventfdWaker, AWakeRacingTheDrainIsSeenOrLeftReadable) {
    expect_holds("eventfd waker: wake against the driver's drain", options{}, waker_body(1));
}

TEST(ModelEventfdWaker, AWakeRacingTheDrainIsNeverLostUnbounded) {
    options o;
    o.preemption_bound = -1;
    expect_holds("eventfd waker: wake against drain, unbounded", o, waker_body(1));
}

TEST(ModelEventfdWaker, ControlRelaxedDrainIsCaught) {
    options o;
    o.weaken = "eventfd_waker_drain";
    expect_caught("eventfd waker control: the drain's clear relaxed", o, waker_body(1));
}

TEST(ModelEventfdWaker, ControlRelaxedWakeIsCaught) {
    options o;
    o.weaken = "eventfd_waker_wake";
    expect_caught("eventfd waker control: the wake's exchange relaxed", o, waker_body(1));
}

TEST(ModelEventfdWaker, ControlDrainThatStoresIsCaught) {
    options o;
    o.weaken = "eventfd_waker_drain_store";
    expect_caught("eventfd waker control: the drain clears the word with a plain store", o,
                  waker_body(1));
}

}  // namespace
}  // namespace blitz::model
