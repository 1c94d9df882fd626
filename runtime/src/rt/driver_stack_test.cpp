// SPDX-License-Identifier: MIT
// driver_stack below the scheduler: where a parked worker sleeps (O2: in the I/O driver while
// descriptors are registered and nobody else is there, else on its futex) and that an unpark
// reaches it wherever it sleeps. No scheduler is attached, so coverage and hand-off wake
// nobody; the verdicts are the park's own answers (token, timeout), never a time.

#include "rt/driver_stack.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace blitz::detail {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<io_driver> epoll_driver() {
    config c;
    c.io_backend = io_backend_kind::epoll;
    std::string why;
    return io_driver::create(c, why);
}

// Parks worker 0 on `stack` from a thread of its own; unparks it from here once it sleeps
// where `in_driver` says. The park is an hour long: only the unpark can end it.
park_wake park_and_unpark(driver_stack& stack, io_driver& io, bool expect_in_driver) {
    parker p;
    std::atomic<int> result{-1};
    std::thread worker([&] { result = static_cast<int>(stack.park(0, p, std::chrono::hours(1))); });
    // Wait until the worker sleeps: in the driver its lock is taken; on the futex there is no
    // other sign, so give it a moment (an early unpark is a token all the same).
    for (int i = 0; i < 2000 && expect_in_driver && !io.locked(); ++i) {
        std::this_thread::sleep_for(1ms);
    }
    if (!expect_in_driver) std::this_thread::sleep_for(20ms);
    EXPECT_EQ(io.locked(), expect_in_driver) << "where the worker sleeps";
    stack.unpark(0, p);
    worker.join();
    return static_cast<park_wake>(result.load());
}

TEST(DriverStack, WithoutDescriptorsAWorkerSleepsOnItsFutexAndAnUnparkWakesIt) {
    timer_driver timers(false);
    auto io = epoll_driver();
    driver_stack stack(timers, io.get(), 1, {});
    EXPECT_EQ(park_and_unpark(stack, *io, false), park_wake::token);
}

TEST(DriverStack, WithADescriptorAWorkerSleepsInTheDriverAndAnUnparkInterruptsIt) {
    timer_driver timers(false);
    auto io = epoll_driver();
    driver_stack stack(timers, io.get(), 1, {});
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    scheduled_io* s = io->add(sv[0]);
    (void)io->turn(std::chrono::nanoseconds(0));  // the registration's first edge, consumed
    EXPECT_EQ(park_and_unpark(stack, *io, true), park_wake::token);
    io->remove(s);
    ::close(sv[0]);
    ::close(sv[1]);
}

// O2's control below the runtime: with the driver wake skipped, the unpark stores the token but
// the worker sleeps on in epoll_wait; a byte on the socket ends it instead, with events.
TEST(DriverStack, TheSkippedDriverWakeLeavesTheWorkerInTheDriver) {
    timer_driver timers(false);
    auto io = epoll_driver();
    driver_stack::faults f;
    f.no_driver_wake = true;
    driver_stack stack(timers, io.get(), 1, f);
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    scheduled_io* s = io->add(sv[0]);
    (void)io->turn(std::chrono::nanoseconds(0));
    parker p;
    std::atomic<int> result{-1};
    std::thread worker([&] { result = static_cast<int>(stack.park(0, p, std::chrono::hours(1))); });
    for (int i = 0; i < 2000 && !io->locked(); ++i) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(io->locked());
    stack.unpark(0, p);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(result.load(), -1) << "the worker left the driver without its wake";
    ASSERT_EQ(::send(sv[1], "x", 1, MSG_NOSIGNAL), 1);  // the rescue: an event
    worker.join();
    // The event ended the wait; the token that arrived meanwhile is reported.
    EXPECT_NE(result.load(), static_cast<int>(park_wake::timeout));
    io->remove(s);
    ::close(sv[0]);
    ::close(sv[1]);
}

}  // namespace
}  // namespace blitz::detail
