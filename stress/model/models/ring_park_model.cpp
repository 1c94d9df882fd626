// SPDX-License-Identifier: MIT
// Model: a worker parked in its own io_uring ring (issue 44; rt/driver_stack.cpp sleep_in_driver,
// io/io_driver.cpp park_own). The worker moves its parker to in_ring, then sleeps until its ring
// posts a completion; an unparker that finds it in_ring wakes the ring through the ring's eventfd
// waker, whose multishot poll the kernel completes on the ring. A completion of the ring's own
// operations may race the wake. No wake is lost: the worker returns with the token or with the
// token left for its next park, and a token it took carries what the unparker wrote.
//
// The ring is modelled by a counter of posted completions that the worker sleeps on (a futex of
// the model: its wait is the worker's io_uring_enter); the kernel's side of the eventfd poll is a
// post made after the eventfd became readable. The parker and the eventfd waker are the runtime's
// own (the eventfd is a real, non-blocking descriptor; each syscall is one indivisible step).

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstdint>

#include "io/backend.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "sched/parker.hpp"

namespace blitz::model {
namespace {

constexpr auto ring_forever = std::chrono::nanoseconds(std::chrono::hours(1));

// poll(2), not read: looking must not drain the eventfd.
bool eventfd_readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

// `route_to_ring` false is the control: the unparker stores the token but never wakes the ring
// (the mutant ring-unpark-dropped). `completion`: a completion of the worker's own operation
// races the wake (it ends the sleep as an event).
std::function<void()> ring_park_body(bool route_to_ring, bool completion) {
    return [=] {
        detail::parker p;
        detail::io_syscall_counts counts;
        detail::eventfd_waker w;            // the ring's waker
        atomic<std::uint32_t> posted{0};    // completions posted on the ring
        atomic<std::uint32_t> ops_done{0};  // of which the worker's own operation
        atomic<int> data{0};
        auto post = [&] {
            // release: the completion's effects before the worker that sees it
            posted.fetch_add(1, std::memory_order_release);
            detail::futex_wake_one(posted);
        };
        thread unparker([&] {
            data.store(1, std::memory_order_relaxed);  // published by unpark's release
            if (p.unpark() == detail::parker::sleeper::ring && route_to_ring) {
                w.wake(counts);
                if (eventfd_readable(w.fd())) post();  // the kernel: the waker's poll completes
            }
        });
        thread completer([&] {
            if (!completion) return;
            ops_done.store(1, std::memory_order_relaxed);
            post();
        });
        bool got = false;
        if (!p.enter_ring()) {
            got = true;  // a token was waiting: consumed, no sleep
        } else {
            std::uint32_t seen = 0;
            for (;;) {
                // park_own: reap what the ring posted (the waker's completion drains the eventfd)
                const std::uint32_t now = posted.load(std::memory_order_acquire);
                if (now != seen) {
                    seen = now;
                    if (eventfd_readable(w.fd())) w.drain(counts);
                }
                if (ops_done.load(std::memory_order_relaxed) != 0 || p.token_waiting()) break;
                detail::futex_wait(posted, now, ring_forever);  // wait_own: sleep for a completion
            }
            got = p.leave_driver();
        }
        if (got) BLITZ_MODEL_CHECK(data.load(std::memory_order_relaxed) == 1);
        unparker.join();
        completer.join();
        // Not lost: the park took the token, or it waits for the next park.
        BLITZ_MODEL_CHECK(got || p.try_consume());
    };
}

TEST(ModelRingPark, AnUnparkReachesAWorkerAsleepInItsRing) {
    expect_holds("ring park: unpark against a worker parking in its ring", untimed(),
                 ring_park_body(true, false));
}

TEST(ModelRingPark, AWakeRacingTheRingsOwnCompletionIsNeverLost) {
    expect_holds("ring park: unpark and a completion against the parking worker", untimed(),
                 ring_park_body(true, true));
}

TEST(ModelRingPark, ControlUnparkThatNeverWakesTheRingIsCaught) {
    expect_caught("ring park control: the unpark stores the token but never wakes the ring",
                  untimed(), ring_park_body(false, false));
}

TEST(ModelRingPark, ControlRelaxedUnparkIsCaught) {
    options o = untimed();
    o.weaken = "parker_unpark";
    expect_caught("ring park control: unpark's exchange relaxed", o, ring_park_body(true, false));
}

}  // namespace
}  // namespace blitz::model
