// SPDX-License-Identifier: MIT
// receive_queue (io/receive_queue.hpp): kept bytes come out in order and before any queued pool
// buffer, bytes put back go in front, every pool buffer goes back to its pool exactly once, and
// queued connections are taken in order or closed with the queue.

#include "io/receive_queue.hpp"

#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "blitz/buffer.hpp"
#include "io/buffer_pool.hpp"

namespace blitz::detail {
namespace {

const std::byte* bytes_of(const char* s) { return reinterpret_cast<const std::byte*>(s); }

std::string take_string(receive_queue& q, std::size_t n) {
    std::string out(n, '\0');
    out.resize(q.take(out.data(), n));
    return out;
}

TEST(ReceiveQueue, KeptBytesComeOutInOrderAndPutBackBytesGoInFront) {
    receive_queue q;
    EXPECT_FALSE(q.any());
    EXPECT_EQ(take_string(q, 8), "");
    q.keep(bytes_of("hello "), 6);
    q.keep(bytes_of("world"), 5);
    EXPECT_EQ(q.bytes(), 11u);
    EXPECT_TRUE(q.any());
    EXPECT_EQ(take_string(q, 4), "hell");
    // A receive that took "o w" from the kept bytes and was then abandoned puts them back.
    const std::string taken = take_string(q, 3);
    EXPECT_EQ(taken, "o w");
    q.keep(bytes_of(taken.data()), taken.size(), true);
    q.keep(bytes_of("!"), 1);
    EXPECT_EQ(take_string(q, 100), "o world!");
    EXPECT_EQ(q.bytes(), 0u);
    EXPECT_FALSE(q.any());
}

TEST(ReceiveQueue, AcceptedConnectionsInOrderAndTheRestClosedWithTheQueue) {
    int a[2], b[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
    {
        receive_queue q;
        EXPECT_EQ(q.take_accepted(), -1);
        q.push_accepted(a[0]);
        q.push_accepted(b[0]);
        EXPECT_EQ(q.accepted(), 2u);
        EXPECT_TRUE(q.any());
        EXPECT_EQ(q.take_accepted(), a[0]);
        EXPECT_EQ(q.accepted(), 1u);
    }  // b[0] closed with the queue
    char c = 0;
    EXPECT_EQ(::read(b[1], &c, 1), 0) << "the queued connection's peer sees it closed";
    EXPECT_EQ(::write(a[1], "x", 1), 1) << "the taken one is the caller's";
    ::close(a[0]);
    ::close(a[1]);
    ::close(b[1]);

    receive_queue q;
    int d[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, d), 0);
    q.push_accepted(d[0]);
    const std::deque<int> all = q.take_accepted_all();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all.front(), d[0]);
    EXPECT_EQ(q.accepted(), 0u);
    ::close(d[0]);
    ::close(d[1]);
}

TEST(ReceiveQueue, PoolBuffersGoBackExactlyOnceAfterTheKeptBytes) {
    io_uring ring;
    if (const int r = io_uring_queue_init(8, &ring, 0); r < 0) {
        GTEST_SKIP() << "io_uring: " << std::strerror(-r);
    }
    std::string why;
    buffer_pool* pool = buffer_pool::create(ring, 4, 16, 7, why);
    if (!pool) {
        io_uring_queue_exit(&ring);
        GTEST_SKIP() << why;
    }
    {
        receive_queue q;
        // As the driver does: the kernel names a buffer (taken), the queue holds it.
        for (std::uint16_t id = 0; id < 3; ++id) {
            pool->taken();
            std::memcpy(pool->data(id), "abcdefgh", 8);
            pool->data(id)[0] = static_cast<std::byte>('0' + id);
            q.push_chunk(pool, id, 8);
        }
        EXPECT_EQ(pool->out(), 3u);
        q.keep(bytes_of("K"), 1);  // kept bytes are older than every queued buffer
        EXPECT_EQ(take_string(q, 100), "K");
        EXPECT_EQ(take_string(q, 5), "0bcde");
        EXPECT_EQ(take_string(q, 100), "fgh") << "a read never spans two buffers";
        EXPECT_EQ(pool->out(), 2u) << "copied out to its end: back in the pool";
        {
            pooled_buffer whole;
            ASSERT_TRUE(q.take_pooled(whole));
            EXPECT_EQ(whole.size(), 8u);
            EXPECT_EQ(static_cast<char>(whole.data()[0]), '1');
            EXPECT_EQ(pool->out(), 2u) << "the pooled buffer holds it now";
        }
        EXPECT_EQ(pool->out(), 1u) << "given back by its pooled_buffer";
        EXPECT_EQ(q.chunks(), 1u);
    }
    EXPECT_EQ(pool->out(), 0u) << "the queue gave the last one back when it went";
    pool->unref();
    io_uring_queue_exit(&ring);
}

}  // namespace
}  // namespace blitz::detail
