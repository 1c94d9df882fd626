// SPDX-License-Identifier: MIT
// Signals (issue 17): delivery to streams on both backends, a fully parked runtime woken by a
// signal, coalescing, refused signals, several runtimes, and a second Ctrl-C that kills.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "blitz/blitz.hpp"
#include "blitz_testing/io_backends.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

config parked_on(io_backend_kind b, unsigned workers) {
    config c;
    c.workers = workers;
    c.io_backend = b;
    c.park_timeout = std::chrono::hours(1);  // only the signal can wake a parked runtime
    return c;
}

// Waits (a stall guard, never a verdict) until `h` is done.
template <class H>
bool done_within(H& h, std::chrono::seconds limit = 20s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!h.is_finished()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

class Signals : public ::testing::TestWithParam<io_backend_kind> {};

TEST_P(Signals, RaiseCompletesCtrlCAndWakesAParkedRuntime) {
    runtime rt(parked_on(GetParam(), 2));
    // The stream exists (handler installed) before anything is raised.
    auto s = rt.block_on([]() -> task<io_result<signal::signal_stream>> {
        co_return signal::signal(signal::kind::interrupt);
    }());
    ASSERT_TRUE(s.ok());
    auto h = rt.spawn([](signal::signal_stream s) -> task<std::uint64_t> {
        co_return co_await s.recv();
    }(std::move(*s)));
    std::this_thread::sleep_for(50ms);  // every worker parks (one of them in the driver)
    ASSERT_EQ(::raise(SIGINT), 0);
    ASSERT_TRUE(done_within(h)) << "a delivery did not wake the parked runtime";
    EXPECT_EQ(h.join(), 1u);
}

TEST_P(Signals, CtrlCTaskCompletes) {
    runtime rt(parked_on(GetParam(), 1));
    auto h = rt.spawn([]() -> task<bool> {
        auto r = co_await signal::ctrl_c();
        co_return r.ok();
    }());
    // ctrl_c() listens from its first poll on: raise until it completes (the first raises may
    // come before the stream exists and are then handled by an earlier test's stream or lost).
    ASSERT_EQ(rt.block_on([]() -> task<bool> {
        auto s = signal::signal(signal::kind::interrupt);  // the handler, before any raise
        co_return s.ok();
    }()),
              true);
    for (int i = 0; i < 2000 && !h.is_finished(); ++i) {
        ::raise(SIGINT);
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(done_within(h));
    EXPECT_TRUE(h.join());
}

TEST_P(Signals, DeliveriesBeforeARecvCoalesce) {
    runtime rt(parked_on(GetParam(), 2));
    const auto counts = rt.block_on([]() -> task<std::pair<std::uint64_t, std::uint64_t>> {
        auto s = signal::signal(signal::kind::user2);
        EXPECT_TRUE(s.ok());
        for (int i = 0; i < 3; ++i) ::raise(SIGUSR2);  // handled at once, on this thread
        const std::uint64_t first = co_await s->recv();
        ::raise(SIGUSR2);
        const std::uint64_t second = co_await s->recv();
        co_return std::pair{first, second};
    }());
    EXPECT_EQ(counts.first, 3u);
    EXPECT_EQ(counts.second, 1u);
}

TEST_P(Signals, AbandonedRecvConsumesNothing) {
    runtime rt(parked_on(GetParam(), 2));
    const std::uint64_t got = rt.block_on([]() -> task<std::uint64_t> {
        auto s = signal::signal(signal::kind::user1);
        auto t = co_await timeout(1ms, s->recv());
        EXPECT_TRUE(t.timed_out());
        ::raise(SIGUSR1);
        co_return co_await s->recv();
    }());
    EXPECT_EQ(got, 1u);
}

TEST_P(Signals, EveryRuntimeSeesEachDelivery) {
    runtime a(parked_on(GetParam(), 1));
    runtime b(parked_on(GetParam(), 1));
    auto make = []() -> task<io_result<signal::signal_stream>> {
        co_return signal::signal(signal::kind::hangup);
    };
    auto sa = a.block_on(make());
    auto sb = b.block_on(make());
    ASSERT_TRUE(sa.ok() && sb.ok());
    auto wait = [](signal::signal_stream s) -> task<std::uint64_t> { co_return co_await s.recv(); };
    auto ha = a.spawn(wait(std::move(*sa)));
    auto hb = b.spawn(wait(std::move(*sb)));
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(::raise(SIGHUP), 0);
    ASSERT_TRUE(done_within(ha) && done_within(hb));
    EXPECT_EQ(ha.join(), 1u);
    EXPECT_EQ(hb.join(), 1u);
}

TEST(SignalsRefused, UncatchableAndFaultSignalsAreEinval) {
    runtime rt(parked_on(io_backend_kind::epoll, 1));
    rt.block_on([]() -> task<void> {
        for (int s : {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, 0, 65, -1}) {
            auto r = signal::signal(s);
            EXPECT_FALSE(r.ok()) << s;
            if (!r.ok()) {
                EXPECT_EQ(r.error(), std::errc::invalid_argument) << s;
            }
        }
        co_return;
    }());
}

// restore_default_after_first: the first SIGQUIT is a stream delivery, the second one takes
// the default action (here: the child dies of it).
TEST(SignalsRestore, ASecondSignalTakesTheDefaultAction) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            runtime rt(parked_on(io_backend_kind::epoll, 1));
            const std::uint64_t n = rt.block_on([]() -> task<std::uint64_t> {
                signal::options o;
                o.restore_default_after_first = true;
                auto s = signal::signal(signal::kind::terminate, o);
                ::raise(SIGTERM);
                co_return co_await s->recv();
            }());
            if (n != 1) std::_Exit(3);
            ::raise(SIGTERM);  // the default action: terminated
            std::_Exit(4);
        },
        ::testing::KilledBySignal(SIGTERM), "");
}

INSTANTIATE_TEST_SUITE_P(Io, Signals, workloads::io_backends(), workloads::io_backend_name);

}  // namespace
}  // namespace blitz
