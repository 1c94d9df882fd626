// SPDX-License-Identifier: MIT
// Latency histograms (issue 46): bucket bounds, the workers' sampled poll, schedule and I/O
// histograms, and the OpenMetrics text a scraper reads.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <regex>
#include <sstream>
#include <string>

#include "blitz/blitz.hpp"
#include "blitz/net/unix.hpp"

namespace {

using namespace std::chrono_literals;
using blitz::latency_histogram_data;

TEST(LatencyHistogram, EveryValueLandsInTheBucketWhoseBoundsHoldIt) {
    using H = latency_histogram_data;
    EXPECT_EQ(H::bucket_of(0), 0u);
    EXPECT_EQ(H::bucket_of(63), 0u);
    EXPECT_EQ(H::bucket_of(64), 1u);
    for (unsigned b = 1; b + 1 < H::buckets; ++b) {
        EXPECT_EQ(H::bucket_of(H::lower_ns(b)), b);
        EXPECT_EQ(H::bucket_of(H::upper_ns(b) - 1), b);
        EXPECT_LT(H::lower_ns(b), H::upper_ns(b));
        // At most 25% wide (4 buckets to a power of two).
        EXPECT_LE(H::upper_ns(b) - H::lower_ns(b), H::lower_ns(b) / 4 + 16);
    }
    EXPECT_EQ(H::bucket_of(~std::uint64_t{0}), H::buckets - 1);
    H h;
    h.counts.assign(H::buckets, 0);
    h.counts[H::bucket_of(1000)] = 90;
    h.counts[H::bucket_of(1'000'000)] = 10;
    EXPECT_EQ(h.count(), 100u);
    EXPECT_EQ(h.quantile_ns(0.5), H::upper_ns(H::bucket_of(1000)));
    EXPECT_EQ(h.quantile_ns(0.99), H::upper_ns(H::bucket_of(1'000'000)));
    EXPECT_GE(h.quantile_ns(0.99), 1'000'000u);
}

TEST(LatencyHistogram, OnePollInSixtyFourIsTimedAndNoneShorterThanItRan) {
    blitz::config c;
    c.workers = 1;
    blitz::runtime rt(c);
    rt.block_on([]() -> blitz::task<void> {
        for (int i = 0; i < 320; ++i) {
            const auto until = std::chrono::steady_clock::now() + 20us;
            while (std::chrono::steady_clock::now() < until) {
            }
            co_await blitz::yield_now();
        }
    }());
    const auto m = rt.metrics();
    const auto& w = m.workers[0];
    EXPECT_EQ(w.poll_ns.count(), w.polls / 64);
    // 320 of the polls spun 20 us each: far more than half of the timed ones are that long.
    EXPECT_GE(w.poll_ns.quantile_ns(0.5), 20'000u);
}

TEST(LatencyHistogram, WakesOnAWorkerAreFollowedToTheirPolls) {
    blitz::config c;
    c.workers = 1;
    blitz::runtime rt(c);
    rt.block_on([]() -> blitz::task<void> {
        blitz::notify ping, pong;
        auto peer = blitz::spawn([](blitz::notify& in, blitz::notify& out) -> blitz::task<void> {
            for (int i = 0; i < 500; ++i) {
                co_await in.notified();
                out.notify_one();
            }
        }(ping, pong));
        for (int i = 0; i < 500; ++i) {
            ping.notify_one();
            co_await pong.notified();
        }
        co_await peer;
    }());
    const auto h = rt.metrics().merged(&blitz::worker_metrics::schedule_ns);
    // About 1,000 wakes, one in 16 followed when the slot is free.
    EXPECT_GE(h.count(), 20u);
    EXPECT_LE(h.count(), 1000u / 16 + 1);
}

TEST(LatencyHistogram, IoWakesAreFollowedFromTheDriversReap) {
    blitz::config c;
    c.workers = 1;
    c.io_backend = blitz::io_backend_kind::epoll;
    blitz::runtime rt(c);
    rt.block_on([]() -> blitz::task<void> {
        auto p = blitz::net::unix_stream::pair();
        auto& [a, b] = *p;
        auto echo = blitz::spawn([](blitz::net::unix_stream& s) -> blitz::task<void> {
            std::byte buf[1];
            for (int i = 0; i < 100; ++i) {
                auto n = co_await s.read(buf);
                if (!n || *n == 0) co_return;
                (void)co_await s.write_all(std::span(buf, 1));
            }
        }(b));
        std::byte one[1] = {std::byte{1}};
        for (int i = 0; i < 100; ++i) {
            (void)co_await a.write_all(std::span(one, 1));
            (void)co_await a.read(one);
        }
        co_await echo;
    }());
    const auto h = rt.metrics().merged(&blitz::worker_metrics::io_ns);
    EXPECT_GE(h.count(), 1u);
}

TEST(OpenMetrics, TheTextIsWellFormedAndHistogramsAreCumulative) {
    blitz::config c;
    c.workers = 2;
    blitz::runtime rt(c);
    rt.block_on([]() -> blitz::task<void> {
        for (int i = 0; i < 64; ++i) co_await blitz::yield_now();
    }());
    const std::string text = rt.metrics().to_openmetrics();
    ASSERT_GE(text.size(), 6u);
    EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
    const std::regex meta(R"(# (TYPE [a-z_]+ (counter|gauge|histogram)|HELP [a-z_]+ .+))");
    const std::regex sample(R"([a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9]+)");
    std::istringstream in(text);
    std::string line, family;
    std::uint64_t last_bucket = 0;
    std::string last_series;
    int samples = 0, buckets = 0;
    while (std::getline(in, line)) {
        if (line == "# EOF") break;
        if (line.rfind("# ", 0) == 0) {
            EXPECT_TRUE(std::regex_match(line, meta)) << line;
            if (line.rfind("# TYPE ", 0) == 0) family = line.substr(7, line.find(' ', 7) - 7);
            continue;
        }
        EXPECT_TRUE(std::regex_match(line, sample)) << line;
        EXPECT_EQ(line.rfind(family, 0), 0u) << "a sample outside its family: " << line;
        ++samples;
        if (line.find("_bucket{") != std::string::npos) {
            ++buckets;
            const std::string series = line.substr(0, line.find(",le="));
            const std::uint64_t v = std::stoull(line.substr(line.rfind(' ') + 1));
            if (series == last_series) EXPECT_GE(v, last_bucket) << line;
            last_series = series;
            last_bucket = v;
        }
    }
    EXPECT_GT(samples, 20);
    EXPECT_GE(buckets, 6);  // at least the +Inf bucket of each histogram and worker
    EXPECT_NE(text.find("blitz_worker_polls_total{worker=\"1\"}"), std::string::npos);
}

}  // namespace
