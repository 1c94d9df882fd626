// SPDX-License-Identifier: MIT
// NIC busy polling (issue 20, IO.md 7.6): config napi_busy_poll registers NAPI busy polling with
// the driver's backend (IORING_REGISTER_NAPI, EPIOCSPARAMS), config socket_busy_poll puts
// SO_BUSY_POLL on the runtime's TCP and UDP sockets, tcp_stream::set_busy_poll on one. Over
// loopback the kernel has no NAPI context to poll, so these tests check what can be checked
// here: the settings reach the kernel (or its refusal is reported), they leave other
// descriptors alone, and I/O works with them on, on both backends.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>

#include "blitz/blitz.hpp"
#include "blitz_testing/io_backends.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;
using net::socket_address;
using net::tcp_listener;
using net::tcp_stream;

config busy_poll_config(io_backend_kind b) {
    config c;
    c.workers = 1;
    c.io_backend = b;
    return c;
}

bool linux_at_least(int major, int minor) {
    utsname u{};
    if (uname(&u) != 0) return false;
    int ma = 0, mi = 0;
    if (std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
    return ma > major || (ma == major && mi >= minor);
}

// net.core.busy_read: the SO_BUSY_POLL a socket starts with (0 when unreadable).
std::chrono::microseconds busy_read_default() {
    int v = 0;
    if (FILE* f = std::fopen("/proc/sys/net/core/busy_read", "r")) {
        if (std::fscanf(f, "%d", &v) != 1) v = 0;
        std::fclose(f);
    }
    return std::chrono::microseconds(v);
}

// One message through a loopback TCP connection and back.
task<std::string> echo_one_message() {
    auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
    if (!l) co_return "bind: " + l.error().message();
    const socket_address where = *l->local_addr();
    auto server = spawn([](tcp_listener l) -> task<void> {
        auto s = co_await l.accept();
        if (!s) co_return;
        std::array<std::byte, 64> buf;
        auto n = co_await s->read(buf);
        if (n && *n > 0) (void)co_await s->write_all(std::span(buf.data(), *n));
    }(std::move(*l)));
    auto c = co_await tcp_stream::connect(where);
    if (!c) co_return "connect: " + c.error().message();
    auto w = co_await c->write_all(workloads::bytes_of("ping"));
    if (!w) co_return "write: " + w.error().message();
    std::string back(4, '\0');
    auto r = co_await c->read_exact(std::as_writable_bytes(std::span<char>(back.data(), 4)));
    if (!r) co_return "read: " + r.error().message();
    co_await server;
    co_return back;
}

TEST(BusyPoll, SettingsOutOfRangeAreConfigErrors) {
    config c;
    c.workers = 1;
    c.napi_busy_poll = -1us;
    const std::string napi = workloads::config_rejection(c);
    EXPECT_NE(napi.find("napi_busy_poll (us) = -1 is out of range"), std::string::npos) << napi;
    c.napi_busy_poll = 0us;
    c.socket_busy_poll = 200ms;
    const std::string so = workloads::config_rejection(c);
    EXPECT_NE(so.find("socket_busy_poll (us) = 200000 is out of range"), std::string::npos) << so;
    c.socket_busy_poll = 0us;
    c.io_backend = io_backend_kind::none;
    c.napi_busy_poll = 50us;
    const std::string none = workloads::config_rejection(c);
    EXPECT_NE(none.find("napi_busy_poll needs an I/O driver"), std::string::npos) << none;
}

class BusyPollBackends : public ::testing::TestWithParam<io_backend_kind> {};

// The registration succeeds on Linux 6.9 and later (and is shown in io_rings), or the runtime
// refuses to start with the kernel's errno; a loopback echo works with it on.
TEST_P(BusyPollBackends, NapiBusyPollIsRegisteredOrRefusedWithTheErrno) {
    config c = busy_poll_config(GetParam());
    c.napi_busy_poll = 50us;
    if (!linux_at_least(6, 9)) {
        const std::string m = workloads::config_rejection(c);
        EXPECT_NE(m.find("it needs Linux 6.9 or later"), std::string::npos) << m;
        GTEST_SKIP() << "this kernel predates NAPI busy-poll registration (checked: refused)";
    }
    runtime rt(c);
    const runtime_metrics m = rt.metrics();
    EXPECT_NE(m.io_rings.find("NAPI busy poll 50 us"), std::string::npos) << m.io_rings;
    EXPECT_EQ(rt.block_on(echo_one_message()), "ping");
    config off = busy_poll_config(GetParam());
    runtime plain(off);
    EXPECT_EQ(plain.metrics().io_rings.find("NAPI"), std::string::npos);
}

// SO_BUSY_POLL on the listener, the connecting and the accepted stream and a UDP socket; not on
// Unix sockets. Where the kernel takes it the value reads back; where it refuses (EPERM) every
// refusal is counted with its errno.
TEST_P(BusyPollBackends, SocketBusyPollReachesTcpAndUdpSocketsOnly) {
    config c = busy_poll_config(GetParam());
    c.socket_busy_poll = 25us;
    runtime rt(c);
    // What the connection's two ends read back (-1: an error, in `seen`).
    long client_us = -1, server_us = -1;
    const std::string seen = rt.block_on([](long& client_us, long& server_us) -> task<std::string> {
        auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
        if (!l) co_return "bind: " + l.error().message();
        auto accepted = spawn([](tcp_listener& l) -> task<io_result<tcp_stream>> {
            co_return co_await l.accept();
        }(*l));
        auto c = co_await tcp_stream::connect(*l->local_addr());
        if (!c) co_return "connect: " + c.error().message();
        auto s = co_await accepted;
        if (!s) co_return "accept: " + s.error().message();
        auto u = net::udp_socket::bind(*socket_address::parse("127.0.0.1:0"));
        if (!u) co_return "udp: " + u.error().message();
        auto pair = net::unix_stream::pair();
        if (!pair) co_return "pair: " + pair.error().message();
        auto cb = c->busy_poll();
        auto sb = s->busy_poll();
        if (!cb || !sb) co_return "getsockopt SO_BUSY_POLL failed";
        client_us = static_cast<long>(cb->count());
        server_us = static_cast<long>(sb->count());
        // One socket's own setting (lowering it needs no privilege), and a value no kernel takes.
        if (auto r = c->set_busy_poll(0us); !r) co_return "set 0: " + r.error().message();
        if (c->busy_poll().value() != 0us) co_return "set_busy_poll(0) did not read back";
        if (c->set_busy_poll(-1us).error() != std::errc::invalid_argument) {
            co_return "a negative busy poll was not refused";
        }
        co_return "ok";
    }(client_us, server_us));
    EXPECT_EQ(seen, "ok");
    const runtime_metrics m = rt.metrics();
    // The listener, the two ends of the connection and the UDP socket; never the Unix pair.
    EXPECT_EQ(m.socket_busy_poll_set + m.socket_busy_poll_failed, 4u);
    if (m.socket_busy_poll_failed == 0) {
        EXPECT_EQ(client_us, 25);
        EXPECT_EQ(server_us, 25);
        EXPECT_EQ(m.socket_busy_poll_error, "");
    } else {
        // Kernels that keep raising it above net.core.busy_read for CAP_NET_ADMIN refused it
        // (6.18 here accepts it unprivileged): the sockets keep the sysctl's value.
        EXPECT_EQ(m.socket_busy_poll_set, 0u);
        EXPECT_EQ(client_us, busy_read_default().count());
        EXPECT_NE(m.socket_busy_poll_error.find("EPERM"), std::string::npos)
            << m.socket_busy_poll_error;
    }
}

INSTANTIATE_TEST_SUITE_P(Io, BusyPollBackends, workloads::io_backends(),
                         workloads::io_backend_name);

}  // namespace
}  // namespace blitz
