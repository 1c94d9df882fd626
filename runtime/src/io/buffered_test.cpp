// SPDX-License-Identifier: MIT
// buf_reader and buf_writer (issue 47, item 8): lines and frames split across reads come whole,
// a read dropped by a select takes nothing (its bytes wait in the buffer), limits bound what a
// peer can make the reader hold, small writes go out together, a dropped flush keeps what did
// not go; and a line server over loopback on both backends.

#include "blitz/buffered.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/io_backends.hpp"
#include "blitz_testing/suite.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

// An in-memory stream: read() gives the next chunk pushed into it (waiting for one, cancel
// safely, through a channel), or 0 once it is closed; a chunk larger than the read is split.
struct chunk_stream {
    explicit chunk_stream(receiver<std::string> r) : rx(std::move(r)) {}
    receiver<std::string> rx;
    std::string pending;
    int reads = 0;
    task<io_result<std::size_t>> read(std::span<std::byte> out) {
        ++reads;
        if (pending.empty()) {
            auto next = co_await rx.recv();
            if (!next) co_return std::size_t{0};
            pending = std::move(*next);
        }
        const std::size_t n = std::min(out.size(), pending.size());
        std::memcpy(out.data(), pending.data(), n);
        pending.erase(0, n);
        co_return n;
    }
};

// An in-memory sink: each write takes at most `step` bytes, and waits for a permit from `gate`
// when one is given.
struct sink_stream {
    std::string got;
    std::size_t step = 1 << 20;
    int writes = 0;
    receiver<int>* gate = nullptr;
    task<io_result<std::size_t>> write(std::span<const std::byte> in) {
        if (gate) (void)co_await gate->recv();
        ++writes;
        const std::size_t n = std::min(step, in.size());
        got.append(reinterpret_cast<const char*>(in.data()), n);
        co_return n;
    }
};

TEST(BufReader, LinesSplitAcrossReadsComeWhole) {
    runtime rt(conformance::fresh(1));
    const std::vector<std::string> lines = rt.block_on([]() -> task<std::vector<std::string>> {
        auto [tx, rx] = channel<std::string>(8);
        for (const char* c : {"hel", "lo\nwor", "ld\r\n\n", "tail"}) (void)tx.try_send(c);
        {
            auto gone = std::move(tx);  // closed: the stream ends after "tail"
        }
        chunk_stream s{std::move(rx)};
        buf_reader r(s, 16);
        auto it = r.lines();
        std::vector<std::string> out;
        for (;;) {
            auto line = co_await it.next_line();
            EXPECT_TRUE(line.ok());
            if (!line.ok() || !*line) break;
            out.push_back(std::move(**line));
        }
        co_return out;
    }());
    EXPECT_EQ(lines, (std::vector<std::string>{"hello", "world", "", "tail"}));
}

TEST(BufReader, AReadLineThatLosesASelectKeepsItsHalfLine) {
    runtime rt(conformance::fresh(1));
    const std::string line = rt.block_on([]() -> task<std::string> {
        auto [tx, rx] = channel<std::string>(8);
        auto [other_tx, other_rx] = channel<int>(1);
        chunk_stream s{std::move(rx)};
        buf_reader r(s, 64);
        (void)tx.try_send("abc");
        (void)other_tx.try_send(1);
        std::string got;
        // read_line reads "abc", then waits for the rest; the ready receive wins.
        auto sel = co_await select(r.read_line(got), other_rx.recv());
        EXPECT_EQ(sel.index(), 1u);
        EXPECT_EQ(got, "");                  // nothing handed out
        EXPECT_EQ(r.buffered().size(), 3u);  // "abc" waits in the buffer
        (void)tx.try_send("def\nnext");
        auto n = co_await r.read_line(got);
        EXPECT_TRUE(n.ok() && *n == 7u);
        co_return got;
    }());
    EXPECT_EQ(line, "abcdef\n");
}

TEST(BufReader, ALineLongerThanTheLimitFailsAndStaysBuffered) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<std::string>(8);
        chunk_stream s{std::move(rx)};
        buf_reader r(s, 16, buffer_limits{.max_line = 32});
        for (int i = 0; i < 10; ++i) (void)tx.try_send("0123456789");
        {
            auto gone = std::move(tx);  // without the limit, the 100 bytes would be a last line
        }
        std::string line;
        auto n = co_await r.read_line(line);
        EXPECT_FALSE(n.ok());
        EXPECT_EQ(n.error(), std::errc::value_too_large);
        EXPECT_TRUE(line.empty());
        EXPECT_GE(r.buffered().size(), 32u);
        EXPECT_LE(r.buffered().size(), 64u);  // bounded by the limit, not by what was sent
    }());
}

TEST(BufReader, ReadExactAndPlainReadsTakeFromTheBufferFirst) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<std::string>(8);
        chunk_stream s{std::move(rx)};
        buf_reader r(s, 16);
        (void)tx.try_send("abcdefgh");
        std::array<std::byte, 3> three;
        auto a = co_await r.read(three);  // one read of the stream fills the buffer
        EXPECT_TRUE(a.ok() && *a == 3u);
        EXPECT_EQ(s.reads, 1);
        std::array<std::byte, 8> eight;
        auto [other_tx, other_rx] = channel<int>(1);
        (void)other_tx.try_send(1);
        auto sel = co_await select(r.read_exact(eight), other_rx.recv());  // 5 of 8: waits
        EXPECT_EQ(sel.index(), 1u);
        EXPECT_EQ(r.buffered().size(), 5u);  // the dropped read_exact took nothing
        (void)tx.try_send("ijk");
        auto e = co_await r.read_exact(eight);
        EXPECT_TRUE(e.ok());
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(eight.data()), 8), "defghijk");
        {
            auto gone = std::move(tx);
        }
        auto end = co_await r.read_exact(eight);
        EXPECT_EQ(end.error(), net::net_errc::unexpected_eof);
    }());
}

TEST(BufFrames, LengthPrefixedFramesRoundTripInAnyChunking) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        sink_stream sink;
        buf_writer w(sink, 256);
        std::vector<std::vector<std::byte>> frames;
        for (std::size_t n :
             {std::size_t{0}, std::size_t{5}, std::size_t{300}, std::size_t{70000}}) {
            std::vector<std::byte> f(n);
            for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<std::byte>(i * 7 + n);
            EXPECT_TRUE((co_await w.write_frame(f)).ok());
            frames.push_back(std::move(f));
        }
        EXPECT_TRUE((co_await w.flush()).ok());
        for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{4096}}) {
            auto [tx, rx] = channel<std::string>(1 << 17);
            for (std::size_t i = 0; i < sink.got.size(); i += chunk)
                (void)tx.try_send(sink.got.substr(i, chunk));
            {
                auto gone = std::move(tx);
            }
            chunk_stream s{std::move(rx)};
            buf_reader r(s, 64);
            for (const auto& f : frames) {
                auto got = co_await r.read_frame();
                EXPECT_TRUE(got.ok() && got->has_value());
                if (got.ok() && got->has_value()) {
                    EXPECT_EQ(**got, f) << "chunk " << chunk;
                }
            }
            auto end = co_await r.read_frame();
            EXPECT_TRUE(end.ok() && !end->has_value());  // the stream ended between frames
        }
    }());
}

TEST(BufFrames, TruncatedAndOversizedFramesFail) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        {
            auto [tx, rx] = channel<std::string>(4);
            (void)tx.try_send(
                std::string("\0\0\0\x09"
                            "abc",
                            7));
            {
                auto gone = std::move(tx);
            }
            chunk_stream s{std::move(rx)};
            buf_reader r(s, 64);
            auto f = co_await r.read_frame();
            EXPECT_EQ(f.error(), net::net_errc::unexpected_eof);
        }
        {
            auto [tx, rx] = channel<std::string>(4);
            (void)tx.try_send(std::string("\0\1\0\0", 4));  // 65,536 announced, none sent
            {
                auto gone = std::move(tx);
            }
            chunk_stream s{std::move(rx)};
            buf_reader r(s, 64, buffer_limits{.max_frame = 1024});
            auto f = co_await r.read_frame();
            EXPECT_EQ(f.error(), std::errc::message_size);  // refused before any buffering
            EXPECT_EQ(r.buffered().size(), 4u);
        }
    }());
}

TEST(BufWriter, SmallWritesGoOutTogetherAndInOrder) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        sink_stream sink;
        sink.step = 7;  // the stream takes 7 bytes a write
        buf_writer w(sink, 1000);
        std::string all;
        for (int i = 0; i < 100; ++i) {
            const std::string piece = std::to_string(i) + ";";
            all += piece;
            EXPECT_TRUE((co_await w.write(piece)).ok());
        }
        EXPECT_EQ(sink.writes, 0);  // 290 bytes: all still in the buffer
        EXPECT_TRUE((co_await w.flush()).ok());
        EXPECT_EQ(sink.got, all);
        EXPECT_EQ(sink.writes, static_cast<int>((all.size() + 6) / 7));
        EXPECT_TRUE(w.pending().empty());
    }());
}

TEST(BufWriter, AFlushDroppedMidwayKeepsWhatDidNotGo) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [gate_tx, gate_rx] = channel<int>(16);
        sink_stream sink;
        sink.step = 4;
        sink.gate = &gate_rx;
        buf_writer w(sink, 100);
        EXPECT_TRUE((co_await w.write(std::string_view("0123456789abcdef"))).ok());
        (void)gate_tx.try_send(1);  // one write of 4 may go
        (void)gate_tx.try_send(1);  // and a second
        auto [other_tx, other_rx] = channel<int>(1);
        auto stop = spawn([](sender<int> tx) -> task<void> {
            co_await yield_now();
            (void)co_await tx.send(1);
        }(other_tx));
        auto sel = co_await select(w.flush(), other_rx.recv());
        co_await stop;
        EXPECT_EQ(sel.index(), 1u);
        EXPECT_EQ(sink.got, "01234567");    // two writes went
        EXPECT_EQ(w.pending().size(), 8u);  // the rest waits
        for (int i = 0; i < 2; ++i) (void)gate_tx.try_send(1);
        EXPECT_TRUE((co_await w.flush()).ok());
        EXPECT_EQ(sink.got, "0123456789abcdef");  // every byte once, in order
    }());
}

class BufferedIo : public ::testing::TestWithParam<io_backend_kind> {};

// A line server (reads lines, answers each with its length) and clients that send their lines
// in odd pieces and read the answers through buf_reader.lines().
TEST_P(BufferedIo, ALineServerOverLoopback) {
    config c = conformance::fresh(2);
    c.io_backend = GetParam();
    runtime rt(c);
    const int ok = rt.block_on([]() -> task<int> {
        auto l = net::tcp_listener::bind(*net::socket_address::parse("127.0.0.1:0"));
        EXPECT_TRUE(l.ok());
        const net::socket_address where = *l->local_addr();
        auto server = spawn([](net::tcp_listener l) -> task<void> {
            for (int c = 0; c < 4; ++c) {
                auto s = co_await l.accept();
                if (!s) co_return;
                spawn([](net::tcp_stream s) -> task<void> {
                    auto [rh, wh] = s.split();
                    buf_reader in(rh);
                    buf_writer out(wh);
                    auto lines = in.lines();
                    for (;;) {
                        auto line = co_await lines.next_line();
                        if (!line || !*line) break;
                        const std::string reply = std::to_string((*line)->size()) + "\n";
                        if (!(co_await out.write(reply)) || !(co_await out.flush())) break;
                    }
                }(std::move(*s)))
                    .detach();
            }
        }(std::move(*l)));
        std::vector<join_handle<int>> clients;
        for (int k = 0; k < 4; ++k) {
            clients.push_back(spawn([](net::socket_address where, int k) -> task<int> {
                auto s = co_await net::tcp_stream::connect(where);
                if (!s) co_return 0;
                auto [rh, wh] = s->split();
                buf_writer out(wh, 64);
                buf_reader in(rh);
                std::string expect;
                for (int i = 0; i < 200; ++i) {
                    const std::string line(static_cast<std::size_t>(i * 7 + k) % 300, 'x');
                    if (!(co_await out.write(line + "\n"))) co_return 0;
                    expect += std::to_string(line.size()) + "\n";
                }
                if (!(co_await out.flush())) co_return 0;
                (void)wh.shutdown();
                std::string got;
                for (;;) {
                    auto n = co_await in.read_line(got);
                    if (!n || *n == 0) break;
                }
                co_return got == expect ? 1 : 0;
            }(where, k)));
        }
        int ok = 0;
        for (auto& h : clients) ok += co_await h;
        co_await server;
        co_return ok;
    }());
    EXPECT_EQ(ok, 4);
}

INSTANTIATE_TEST_SUITE_P(Io, BufferedIo, workloads::io_backends(), workloads::io_backend_name);

}  // namespace
}  // namespace blitz
