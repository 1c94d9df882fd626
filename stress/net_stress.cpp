// SPDX-License-Identifier: MIT
// TCP under stress (issue 16), on both backends, also under ThreadSanitizer and ASan: 64
// connections over loopback; on each, a writer sends a deterministic byte sequence in random
// pieces and may stop (close) at a random point, and a reader takes it through plain reads,
// reads raced by short timeouts, reads in tasks aborted at random, and owned reads (completion
// operations on io_uring), alone or raced by timeouts. The oracle: every
// reader's bytes are exactly a prefix of its connection's sequence (nothing lost, nothing
// duplicated, nothing reordered), and complete when the writer did not stop early. Connects
// aborted mid-way leak nothing, and no socket stays registered.
// NET_STRESS_FAULT=1 runs it with io_drop_orphan_data (a cancelled read drops bytes): the oracle
// must then report differing bytes.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/io_backends.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

using net::socket_address;
using net::tcp_listener;
using net::tcp_stream;

std::byte expected(std::uint32_t conn, std::uint64_t k) {
    return static_cast<std::byte>((conn * 31u + k * 7u + k / 251u) % 251u);
}

struct conn_result {
    std::uint64_t read = 0, planned = 0;
    bool stopped_early = false;
    std::uint64_t first_bad = UINT64_MAX;
};

task<void> writer(tcp_stream s, std::uint32_t conn, std::uint64_t planned, bool stop_early,
                  std::uint64_t seed) {
    detail::fast_rng rng(seed);
    const std::uint64_t stop =
        stop_early ? rng.bounded(static_cast<std::uint32_t>(planned)) : planned;
    std::vector<std::byte> piece;
    for (std::uint64_t k = 0; k < stop;) {
        const std::uint64_t n = std::min<std::uint64_t>(stop - k, 1 + rng.bounded(3000));
        piece.resize(n);
        for (std::uint64_t i = 0; i < n; ++i) piece[i] = expected(conn, k + i);
        if (!co_await s.write_all(piece)) co_return;
        k += n;
        if (rng.bounded(8) == 0) co_await yield_now();
    }
}  // closes the stream: the reader sees the end

task<void> reader(tcp_stream s, std::uint32_t conn, conn_result& r, std::uint64_t seed) {
    detail::fast_rng rng(seed);
    std::array<std::byte, 1500> buf;
    auto take_from = [&](const std::byte* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            if (p[i] != expected(conn, r.read + i) && r.first_bad == UINT64_MAX) {
                r.first_bad = r.read + i;
            }
        }
        r.read += n;
    };
    auto take = [&](std::size_t n) { take_from(buf.data(), n); };
    for (;;) {
        const std::size_t want = 1 + rng.bounded(buf.size());
        const unsigned how = rng.bounded(8);
        if (how == 6 || how == 7) {
            // A pooled read (a multishot receive on a small provided-buffer ring on io_uring,
            // which the 64 connections run dry), raced by a timeout half the time.
            io_result<pooled_buffer> got = std::make_error_code(std::errc::operation_canceled);
            if (how == 6) {
                auto t =
                    co_await timeout(std::chrono::microseconds(rng.bounded(300)), s.read_pooled());
                if (t.timed_out()) continue;
                got = std::move(t.value());
            } else {
                got = co_await s.read_pooled();
            }
            if (!got || got->empty()) co_return;
            take_from(got->data(), got->size());
        } else if (how == 4 || how == 5) {
            // An owned read (a completion operation on io_uring), raced by a timeout half the
            // time: an abandoned one's late bytes must come back to the next read.
            io_result<std::size_t> n = std::error_code();
            owned_buffer got;
            if (how == 4) {
                auto t = co_await timeout(std::chrono::microseconds(rng.bounded(300)),
                                          s.read_owned(owned_buffer(want)));
                if (t.timed_out()) continue;
                auto [res, b] = std::move(t.value());
                n = std::move(res);
                got = std::move(b);
            } else {
                auto [res, b] = co_await s.read_owned(owned_buffer(want));
                n = std::move(res);
                got = std::move(b);
            }
            if (!n || *n == 0) co_return;
            std::copy(got.data(), got.data() + *n, buf.data());
            take(*n);
        } else if (how == 0) {
            auto t = co_await timeout(std::chrono::microseconds(rng.bounded(300)),
                                      s.read(buf.data(), want));
            if (t.timed_out()) continue;
            auto n = std::move(t.value());
            if (!n || *n == 0) co_return;
            take(*n);
        } else if (how == 1) {
            std::size_t got = 0;
            bool end = false;
            auto h = spawn([](tcp_stream& s, std::array<std::byte, 1500>& buf, std::size_t want,
                              std::size_t& got, bool& end) -> task<void> {
                auto n = co_await s.read(buf.data(), want);
                if (!n || *n == 0) {
                    end = true;
                } else {
                    got = *n;
                }
            }(s, buf, want, got, end));
            if (rng.bounded(2)) co_await yield_now();
            h.abort();
            try {
                co_await h;
            } catch (const task_cancelled&) {
            }
            if (end) co_return;
            take(got);
        } else {
            auto n = co_await s.read(buf.data(), want);
            if (!n || *n == 0) co_return;
            take(*n);
        }
    }
}

// The server side: reads the connection's 4-byte id, then writes that connection's sequence.
task<void> serve_one(tcp_stream s, std::uint64_t per, const std::vector<std::uint8_t>& stops,
                     std::uint64_t seed) {
    std::array<std::byte, 4> id;
    if (!co_await s.read_exact(id)) co_return;  // an aborted connect: the end at once
    std::uint32_t conn = 0;
    for (int i = 0; i < 4; ++i) conn |= std::to_integer<std::uint32_t>(id[i]) << (8 * i);
    if (conn >= stops.size()) co_return;
    co_await writer(std::move(s), conn, per, stops[conn] != 0, seed + conn);
}

class NetStress : public ::testing::TestWithParam<io_backend_kind> {};

TEST_P(NetStress, SixtyFourConnectionsKeepEveryStreamExact) {
    for (unsigned workers : {1u, 2u, 4u}) {
        config c;
        c.workers = workers;
        c.io_backend = GetParam();
        c.io_pool_buffers = 16;  // 64 connections share them: the ring runs dry (O11, R7)
        c.io_pool_buffer_size = 256;
        c.debug.io_drop_orphan_data = std::getenv("NET_STRESS_FAULT") != nullptr;
        runtime rt(c);
        constexpr std::uint32_t conns = 64;
        std::vector<conn_result> results(conns);
        std::vector<std::uint8_t> stops(conns);
        const std::uint64_t per = 50000 * stress::scale();
        detail::fast_rng rng(workers * 977 + per);
        for (auto& st : stops) st = rng.bounded(4) == 0;
        rt.block_on([](std::vector<conn_result>& results, const std::vector<std::uint8_t>& stops,
                       std::uint64_t per, std::uint64_t seed) -> task<void> {
            auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
            const socket_address where = *l->local_addr();
            auto server =
                spawn([](tcp_listener l, std::uint64_t per, const std::vector<std::uint8_t>& stops,
                         std::uint64_t seed) -> task<void> {
                    std::vector<join_handle<void>> hs;
                    for (;;) {
                        auto s = co_await l.accept();
                        if (!s) break;
                        hs.push_back(spawn(serve_one(std::move(*s), per, stops, seed)));
                        if (hs.size() >= stops.size() * 2) break;
                    }
                    for (auto& h : hs) co_await h;
                }(std::move(*l), per, stops, seed));
            detail::fast_rng rng(seed);
            std::vector<join_handle<void>> readers;
            int extra = 0;
            for (std::uint32_t i = 0; i < conns; ++i) {
                // Now and then a connect aborted mid-way: it leaks nothing, and if the kernel
                // completed it, the server sees the end at once.
                if (rng.bounded(8) == 0) {
                    auto h = spawn(tcp_stream::connect(where));
                    if (rng.bounded(2)) co_await yield_now();
                    h.abort();
                    try {
                        (void)co_await h;
                    } catch (const task_cancelled&) {
                    }
                    ++extra;
                }
                auto cs = co_await tcp_stream::connect(where);
                EXPECT_TRUE(cs.ok()) << cs.error().message();
                if (!cs) break;
                std::array<std::byte, 4> id;
                for (int k = 0; k < 4; ++k) id[k] = static_cast<std::byte>(i >> (8 * k));
                EXPECT_TRUE((co_await cs->write_all(id)).ok());
                results[i].planned = per;
                results[i].stopped_early = stops[i] != 0;
                readers.push_back(spawn(reader(std::move(*cs), i, results[i], rng.next())));
            }
            for (auto& h : readers) co_await h;
            // Wake the accept loop with connections that close at once, then let it finish.
            for (std::uint32_t i = 0; i < conns * 2; ++i) {
                auto cs = co_await tcp_stream::connect(where);
                if (!cs) break;
            }
            co_await server;
            (void)extra;
        }(results, stops, per, rng.next()));
        for (std::uint32_t i = 0; i < conns; ++i) {
            const conn_result& r = results[i];
            EXPECT_EQ(r.first_bad, UINT64_MAX) << "connection " << i << ": byte " << r.first_bad
                                               << " differs (workers " << workers << ")";
            EXPECT_LE(r.read, r.planned) << "connection " << i;
            if (!r.stopped_early) {
                EXPECT_EQ(r.read, r.planned)
                    << "connection " << i << " (workers " << workers << ")";
            }
        }
        // A descriptor closed with operations in flight (the listener's multishot accept, a
        // pooled receive) is deregistered by the reap of its last cancelled operation, which
        // a worker may still be making: wait for it by count of looks, then check.
        runtime_metrics m = rt.metrics();
        for (int i = 0; i < 100'000 && (m.io_registered != 0 || m.io_pool_out != 0); ++i) {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            m = rt.metrics();
        }
        EXPECT_EQ(m.io_registered, 0u) << "sockets left registered";
        EXPECT_EQ(m.io_pool_out, 0u) << "pool buffers never came back";
        RecordProperty("pool_enobufs_w" + std::to_string(workers),
                       std::to_string(m.io_pool_enobufs));
    }
}

INSTANTIATE_TEST_SUITE_P(Io, NetStress, workloads::io_backends(), workloads::io_backend_name);

}  // namespace
}  // namespace blitz
