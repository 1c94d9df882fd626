// SPDX-License-Identifier: MIT
// Busy mode (config io_mode busy, issue 20): its configuration errors, idle workers that spin
// instead of parking on both I/O backends, a finite busy_poll_spin that parks when it runs out,
// and the io_uring submission-polling thread (sqpoll_cpu).

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/os.hpp"
#include "blitz/blitz.hpp"
#include "blitz/testing.hpp"
#include "blitz_testing/io_backends.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

config busy(io_backend_kind b) {
    config c;
    c.workers = 1;
    c.topology.policy = placement_policy::compact;
    c.io_mode = io_mode_kind::busy;
    c.io_backend = b;
    c.park_timeout = std::chrono::hours(1);  // a park would stay visible, never be covered
    return c;
}

TEST(BusyMode, NeedsAPlacementPolicy) {
    config c;
    c.workers = 1;
    c.io_mode = io_mode_kind::busy;
    const std::string m = workloads::config_rejection(c);
    EXPECT_NE(m.find("io_mode = busy needs a placement policy"), std::string::npos) << m;
    c.topology.policy = placement_policy::compact;
    c.busy_poll_spin = 10ns;
    const std::string spin = workloads::config_rejection(c);
    EXPECT_NE(spin.find("busy_poll_spin (ns) = 10 is out of range"), std::string::npos) << spin;
}

TEST(BusyMode, SqpollNeedsPlacementIoUringAndACpuNoWorkerRuns) {
    config c;
    c.workers = 1;
    c.sqpoll_cpu = 0;
    EXPECT_NE(workloads::config_rejection(c).find("sqpoll_cpu needs a placement policy"),
              std::string::npos);
    c.topology.policy = placement_policy::compact;
    c.io_backend = io_backend_kind::epoll;
    EXPECT_NE(
        workloads::config_rejection(c).find("needs the io_uring backend (io_backend is epoll)"),
        std::string::npos);
    c.io_backend = io_backend_kind::automatic;
    c.sqpoll_cpu = -2;
    EXPECT_NE(workloads::config_rejection(c).find("sqpoll_cpu = -2 is out of range"),
              std::string::npos);
    const std::vector<unsigned> cpus = detail::os::this_thread_cpus();
    ASSERT_FALSE(cpus.empty());
    c.topology.policy = placement_policy::list;
    c.topology.pus = {cpus[0]};
    c.sqpoll_cpu = static_cast<int>(cpus[0]);
    const std::string m = workloads::config_rejection(c);
    EXPECT_NE(m.find("is worker 0's CPU"), std::string::npos) << m;
}

class BusyBothBackends : public ::testing::TestWithParam<io_backend_kind> {};

// The busy counterpart of net_test's AParkedRuntimeWakesOnASocket: the worker never parks,
// a plain thread writes to a socket, and the spinning worker's own look at the driver
// dispatches the read (no driver wake, no futex).
TEST_P(BusyBothBackends, AnIdleWorkerSpinsOverTheDriverAndNeverParks) {
    runtime rt(busy(GetParam()));
    EXPECT_EQ(rt.metrics().io_mode, "busy");
    const std::uint64_t wakes = rt.metrics().io_wake_calls;  // io_uring's setup self-test: 1
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    std::atomic<bool> reading{false};
    auto h = rt.spawn([](int fd, std::atomic<bool>& reading) -> task<std::size_t> {
        net::unix_stream s(fd);
        std::array<std::byte, 16> buf;
        co_await sleep(2ms);  // a timer fired by the spinning worker
        reading = true;
        auto n = co_await s.read(buf);
        co_return n ? *n : 0;
    }(sv[0], reading));
    while (!reading) std::this_thread::sleep_for(1ms);
    // The one worker looks at the driver twice more: it is past the task's poll, so the read is
    // pending and the worker spins (no bound: the ctest timeout reports a stall).
    const std::uint64_t polls = rt.metrics().total(&worker_metrics::busy_polls);
    while (rt.metrics().total(&worker_metrics::busy_polls) < polls + 2) std::this_thread::yield();
    ASSERT_EQ(write(sv[1], "hello", 5), 5);
    EXPECT_EQ(h.join(), 5u);
    const runtime_metrics m = rt.metrics();
    EXPECT_EQ(m.total(&worker_metrics::parks), 0u);
    EXPECT_GT(m.total(&worker_metrics::busy_polls), 0u);
    EXPECT_EQ(m.total(&worker_metrics::busy_expiries), 0u);
    EXPECT_EQ(m.io_wake_calls, wakes) << "nobody sleeps in the driver, so nothing wakes it";
    // Spinning is not searching: at rest no worker counts as a searcher (I1).
    const std::uint64_t looks = m.total(&worker_metrics::busy_polls);
    while (rt.metrics().total(&worker_metrics::busy_polls) < looks + 2) std::this_thread::yield();
    EXPECT_EQ(rt.metrics().num_searching, 0u);
    close(sv[1]);
}

// busy_poll_spin: once it runs out without work the worker parks as in shared mode, and a
// spawn from a plain thread wakes it as usual.
TEST_P(BusyBothBackends, AFiniteSpinParksWhenItRunsOut) {
    config c = busy(GetParam());
    c.busy_poll_spin = 200us;
    runtime rt(c);
    while (rt.metrics().num_parked == 0) std::this_thread::sleep_for(1ms);
    const runtime_metrics m = rt.metrics();
    EXPECT_GT(m.total(&worker_metrics::busy_expiries), 0u);
    EXPECT_GT(m.total(&worker_metrics::parks), 0u);
    EXPECT_EQ(rt.spawn([]() -> task<int> { co_return 7; }()).join(), 7);
}

INSTANTIATE_TEST_SUITE_P(Io, BusyBothBackends, workloads::io_backends(),
                         workloads::io_backend_name);

// SQPOLL on a CPU no worker runs: owned-buffer reads and writes (completion operations) go
// through the polling thread, and the metrics say where it runs.
TEST(BusyMode, SqpollThreadOnASpareCpu) {
    const std::vector<unsigned> cpus = detail::os::this_thread_cpus();
    if (cpus.size() < 2) {
        GTEST_SKIP() << "one CPU allowed here: no CPU is left for the polling thread";
    }
    config c = busy(io_backend_kind::automatic);
    c.topology.policy = placement_policy::list;
    c.topology.pus = {cpus[0]};
    c.sqpoll_cpu = static_cast<int>(cpus[1]);
    runtime rt(c);
    const runtime_metrics m0 = rt.metrics();
    if (m0.io_backend != "io_uring") {
        EXPECT_NE(m0.io_backend_reason.find("sqpoll_cpu not applied"), std::string::npos)
            << m0.io_backend_reason;
        GTEST_SKIP() << "io_uring is unavailable here: " << m0.io_backend_reason;
    }
    EXPECT_NE(m0.io_rings.find("SQPOLL thread on CPU " + std::to_string(cpus[1])),
              std::string::npos)
        << m0.io_rings;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    const std::size_t got = rt.block_on([](int a, int b) -> task<std::size_t> {
        net::unix_stream x(a), y(b);
        std::size_t total = 0;
        for (int i = 0; i < 100; ++i) {
            auto w = co_await x.write_all(workloads::bytes_of("ping"));
            EXPECT_TRUE(w.ok());
            owned_buffer into(16);
            auto [r, buf] = co_await y.read_owned(std::move(into));
            if (r.ok()) total += *r;
        }
        co_return total;
    }(sv[0], sv[1]));
    EXPECT_EQ(got, 400u);
    EXPECT_GT(rt.metrics().io_ops, 0u);
}

}  // namespace
}  // namespace blitz
