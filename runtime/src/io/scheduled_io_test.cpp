// SPDX-License-Identifier: MIT
// scheduled_io's readiness word (O16): the event count guards a reader's clear against an edge
// that arrived after its syscall (Tokio's tick rule). Each race is driven step by step, so the
// verdict never depends on scheduling: the edge lands between the reader's poll and its clear.

#include "io/scheduled_io.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "blitz/blitz.hpp"
#include "blitz_testing/io_backends.hpp"
#include "io/epoll_backend.hpp"

namespace blitz::detail {
namespace {

TEST(ScheduledIo, AClearWithTheCurrentCountDropsTheBit) {
    scheduled_io s(-1);
    s.set_ready(io_readable);
    const io_ready_event ev = s.poll(io_direction::read);
    ASSERT_TRUE(ev.ready & io_readable);
    s.clear(ev);
    EXPECT_FALSE(s.poll(io_direction::read).ready & io_readable);
    wait_node node;
    EXPECT_TRUE(s.wait(io_direction::read, node, waker{})) << "nothing ready: the reader waits";
    s.cancel_wait(node);
}

TEST(ScheduledIo, AClearKeepsAnEdgeThatArrivedAfterTheReadersPoll) {
    scheduled_io s(-1);
    s.set_ready(io_readable);
    const io_ready_event ev = s.poll(io_direction::read);  // the reader's look, then EAGAIN
    s.set_ready(io_readable);                              // a new edge before its clear
    s.clear(ev);
    EXPECT_TRUE(s.poll(io_direction::read).ready & io_readable)
        << "the clear erased an edge newer than the reader's syscall";
    wait_node node;
    EXPECT_FALSE(s.wait(io_direction::read, node, waker{})) << "the reader must retry, not wait";
}

TEST(ScheduledIo, AClearNeverDropsClosedErrorOrShutdownBits) {
    scheduled_io s(-1);
    s.set_ready(io_readable | io_read_closed | io_error);
    s.clear(s.poll(io_direction::read));
    const std::uint32_t left = s.poll(io_direction::read).ready;
    EXPECT_TRUE(left & io_read_closed);
    EXPECT_TRUE(left & io_error);
}

TEST(ScheduledIo, AClearOfOneDirectionLeavesTheOther) {
    scheduled_io s(-1);
    s.set_ready(io_readable | io_writable);
    s.clear(s.poll(io_direction::read));
    EXPECT_TRUE(s.poll(io_direction::write).ready & io_writable);
}

// Hands every event of an epoll wait to its scheduled_io, as the driver does.
struct to_scheduled_io final : io_event_sink {
    void ready(scheduled_io* s, std::uint32_t bits) noexcept override { s->set_ready(bits); }
    void released(scheduled_io*) noexcept override {}
    void completed(io_op_state*, int) noexcept override {}
    void multishot(io_op_state*, int, int, bool) noexcept override {}
};

// The whole race on a real socket under edge-triggered epoll: the reader polls, its recv meets
// EAGAIN, the peer writes and the driver delivers that edge, and only then does the reader clear.
// Edge-triggered epoll reports the data once: a clear that erased that edge would leave the
// reader waiting with bytes in the socket and no event ever to come.
TEST(ScheduledIo, AnEpollEdgeBetweenEagainAndTheClearIsNotLost) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    epoll_backend b(64);
    scheduled_io s(sv[0]);
    b.add(&s);
    to_scheduled_io sink;
    ASSERT_EQ(::send(sv[1], "a", 1, MSG_NOSIGNAL), 1);
    ASSERT_GE(b.wait(std::chrono::nanoseconds(0), sink), 1u) << "the edge of the first byte";

    const io_ready_event ev = s.poll(io_direction::read);  // readable: the reader reads
    ASSERT_TRUE(ev.ready & io_readable);
    char c;
    ASSERT_EQ(::recv(sv[0], &c, 1, 0), 1);
    ASSERT_EQ(::recv(sv[0], &c, 1, 0), -1);  // drained: EAGAIN, so the reader will clear
    ASSERT_EQ(errno, EAGAIN);
    ASSERT_EQ(::send(sv[1], "x", 1, MSG_NOSIGNAL), 1);
    ASSERT_GE(b.wait(std::chrono::nanoseconds(0), sink), 1u) << "the edge of the write";
    s.clear(ev);  // the reader's clear for its EAGAIN, after the newer edge

    wait_node node;
    const bool waits = s.wait(io_direction::read, node, waker{});
    if (waits) s.cancel_wait(node);
    EXPECT_FALSE(waits) << "the reader sleeps with a byte in the socket";
    EXPECT_EQ(b.wait(std::chrono::nanoseconds(0), sink), 0u) << "epoll reports that edge once";
    EXPECT_EQ(::recv(sv[0], &c, 1, 0), 1);
    b.remove(&s);
    ::close(sv[0]);
    ::close(sv[1]);
}

// A stream read that fills less than its buffer has emptied the socket (Tokio's partial-read
// rule): io_op drops the readable bit with it, so the next read waits for the next edge
// instead of paying a recv(2) for EAGAIN. A read that fills its buffer keeps the bit (more may
// wait). On both backends, in a runtime, through the real awaiter.
class ShortReads : public ::testing::TestWithParam<io_backend_kind> {};

TEST_P(ShortReads, AShortStreamReadDropsTheReadableBitAndAFullOneKeepsIt) {
    config c;
    c.workers = 1;
    c.io_backend = GetParam();
    c.io_worker_rings = false;  // readiness reads on io_uring too (no multishot receive)
    runtime rt(c);
    rt.block_on([]() -> task<void> {
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        io_object o(sv[0]);
        auto readable = [&o] {
            return (io_poll_ready(o.sio(), io_direction::read).ready & io_readable) != 0;
        };
        auto read = [&o](char* buf, std::size_t n) {
            return io_op<net::ops::recv_op>(o, io_direction::read,
                                            net::ops::recv_op{o.fd(), buf, n, o.sio(), o.driver()},
                                            false);
        };
        char buf[64];
        EXPECT_EQ(::send(sv[1], "0123456789", 10, MSG_NOSIGNAL), 10);
        auto r = co_await read(buf, 4);  // a full read: 4 of 10
        EXPECT_TRUE(r.ok() && *r == 4);
        EXPECT_TRUE(readable()) << "a read that filled its buffer keeps the bit";
        r = co_await read(buf, sizeof buf);  // the 6 left: a short read
        EXPECT_TRUE(r.ok() && *r == 6);
        EXPECT_FALSE(readable()) << "a short stream read emptied the socket";
        EXPECT_EQ(::send(sv[1], "abc", 3, MSG_NOSIGNAL), 3);
        r = co_await read(buf, sizeof buf);  // waits for that edge
        EXPECT_TRUE(r.ok() && *r == 3);
        EXPECT_EQ(std::string(buf, 3), "abc");
        ::close(sv[1]);
        r = co_await read(buf, sizeof buf);  // end of stream: the closed bit was kept
        EXPECT_TRUE(r.ok() && *r == 0);
    }());
}

INSTANTIATE_TEST_SUITE_P(Io, ShortReads, ::blitz::workloads::io_backends(),
                         ::blitz::workloads::io_backend_name);

}  // namespace
}  // namespace blitz::detail
