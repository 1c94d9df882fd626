// SPDX-License-Identifier: MIT
// io_ops (io/io_ops.hpp), on a driver of its own with no runtime: an abandoned receive's late
// bytes are kept for the next read (R4), and a descriptor closed with a receive in flight is
// closed only after that receive's final completion (R5). io_uring only: epoll has no
// completion operations.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "blitz/config.hpp"
#include "io/io_driver.hpp"
#include "io/op_state.hpp"
#include "io/scheduled_io.hpp"

namespace blitz::detail {
namespace {

std::shared_ptr<io_driver> uring_driver() {
    config c;
    c.io_backend = io_backend_kind::prefer_io_uring;
    std::string reason;
    auto d = io_driver::create(c, reason);
    return d && d->completion_ops() ? d : nullptr;
}

// Turns `d` until `done` (bounded by count of turns, not by time).
template <class F>
void turn_until(io_driver& d, F done) {
    for (int i = 0; i < 1000 && !done(); ++i) {
        ASSERT_TRUE(d.try_lock());
        (void)d.turn(std::chrono::milliseconds(10));
        d.unlock();
    }
    ASSERT_TRUE(done());
}

// A driver of its own, a socket pair registered with it, and a receive of 16 bytes on its first
// end submitted to the kernel. Skipped without io_uring.
class IoOps : public ::testing::Test {
protected:
    void SetUp() override {
        d = uring_driver();
        if (!d) GTEST_SKIP() << "no io_uring here";
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        s = d->add(sv[0]);
        owned_buffer buf(16);
        waker w;
        op = d->start(s, io_op_kind::recv, buf, w);
        ASSERT_NE(op, nullptr);
        d->flush();
    }

    std::shared_ptr<io_driver> d;
    int sv[2] = {-1, -1};
    scheduled_io* s = nullptr;
    io_op_state* op = nullptr;
};

TEST_F(IoOps, AnAbandonedReceivesLateBytesAreReadOnceAndInOrder) {
    d->abandon(op);  // the task went away: the receive is cancelled, or completes late
    ASSERT_EQ(::write(sv[1], "abc", 3), 3);
    ASSERT_EQ(::write(sv[1], "def", 3), 3);
    turn_until(*d, [&] { return d->stats().ops_in_flight == 0; });
    // Whatever the cancel caught: the kept bytes first, then the socket's, each once.
    std::string got(16, '\0');
    std::size_t n = s->received().take(got.data(), got.size());
    const ssize_t k = ::recv(sv[0], got.data() + n, got.size() - n, 0);
    if (k > 0) n += static_cast<std::size_t>(k);
    got.resize(n);
    EXPECT_EQ(got, "abcdef");
    EXPECT_EQ(d->stats().ops_orphaned, 1u);
    d->close(s, sv[0]);
    ::close(sv[1]);
    d->shutdown();
}

TEST_F(IoOps, ACloseWithAReceiveInFlightClosesAfterItsFinalCompletion) {
    d->close(s, sv[0]);
    EXPECT_EQ(d->stats().deferred_closes, 1u);
    EXPECT_NE(::fcntl(sv[0], F_GETFD), -1) << "the kernel may still use it: not closed yet";
    owned_buffer none;
    waker w2;
    EXPECT_EQ(d->start(s, io_op_kind::recv, none, w2), nullptr) << "no start on a closing one";
    turn_until(*d, [&] { return op->finished(); });  // the cancel's completion ends it
    owned_buffer back;
    EXPECT_EQ(d->finish(op, back), -ECANCELED);
    EXPECT_EQ(::fcntl(sv[0], F_GETFD), -1) << "closed by the last operation's release";
    EXPECT_EQ(d->stats().live, 0u);
    ::close(sv[1]);
    d->shutdown();
}

}  // namespace
}  // namespace blitz::detail
