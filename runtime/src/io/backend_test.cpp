// SPDX-License-Identifier: MIT
// The backends' wake contract, below the driver: a wake() made before a wait begins ends that
// wait, on both backends, even when the wait reaps the wake before it would sleep.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "io/epoll_backend.hpp"
#include "io/uring_backend.hpp"

namespace blitz::detail {
namespace {

using namespace std::chrono_literals;

struct ignore_events final : io_event_sink {
    void ready(scheduled_io*, std::uint32_t) noexcept override {}
    void released(scheduled_io*) noexcept override {}
    void completed(io_op_state*, int) noexcept override {}
    void multishot(io_op_state*, int, int, bool) noexcept override {}
};

// A wake made while nobody waits must end the next wait without a second wake. The verdict is a
// count (did a rescuer's second wake have to end the wait?), not a time: the rescuer only keeps
// a broken backend from hanging the test. io_uring used to reap the waker's completion at the
// start of its wait, then sleep on in the kernel: the wake meant for a parked worker was gone
// and the worker slept through its claim (conformance O4 hung on it under TSan).
void wake_before_wait_ends_it(io_backend& b) {
    ignore_events sink;
    b.wake();
    // Give an asynchronous backend time to post the waker's completion before the wait reaps
    // it: the early reap is the path under test.
    std::this_thread::sleep_for(20ms);
    std::atomic<bool> done{false}, rescued{false};
    std::thread rescuer([&] {
        const auto until = std::chrono::steady_clock::now() + 5s;
        while (!done.load() && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(1ms);
        }
        if (!done.load()) {
            rescued.store(true);
            b.wake();
        }
    });
    (void)b.wait(std::chrono::hours(1), sink);
    done.store(true);
    rescuer.join();
    EXPECT_FALSE(rescued.load()) << b.name() << ": the wait slept through a wake made before it";
}

TEST(IoBackendWake, AWakeBeforeTheWaitEndsItOnIoUring) {
    uring_probe_result why;
    auto b = uring_backend::create(64, 0, 0, 0, -1, false, why);
    if (!b)
        GTEST_SKIP() << "io_uring unavailable here: " << why.what << " (errno " << why.error << ")";
    wake_before_wait_ends_it(*b);
    // And again, with the waker's multishot poll already used once.
    wake_before_wait_ends_it(*b);
}

TEST(IoBackendWake, AWakeBeforeTheWaitEndsItOnEpoll) {
    epoll_backend b(64);
    wake_before_wait_ends_it(b);
    wake_before_wait_ends_it(b);
}

}  // namespace
}  // namespace blitz::detail
