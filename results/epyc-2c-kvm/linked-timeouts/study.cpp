// SPDX-License-Identifier: MIT
// The linked-timeouts study (README.md beside it): what does a linked timeout cost an owned
// read under timeout() that does not time out, and what does it save one that does?
// Built by hand against the release build (see README.md for the command).
#include <blitz/blitz.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace blitz;
using namespace blitz::net;
using namespace std::chrono_literals;

// One worker on io_uring, with or without linked timeouts.
static config one_worker(bool linked) {
    config c;
    c.workers = 1;
    c.io_backend = io_backend_kind::io_uring;
    c.io_linked_timeouts = linked;
    return c;
}

// Ping-pong of 64-byte messages over a Unix stream pair, every read_owned under timeout(1 s).
static double pingpong(bool linked, int rounds) {
    runtime rt(one_worker(linked));
    const auto t0 = std::chrono::steady_clock::now();
    rt.block_on([](int rounds) -> task<void> {
        auto p = unix_stream::pair();
        auto echo = spawn([](unix_stream s, int rounds) -> task<void> {
            owned_buffer b(64);
            for (int i = 0; i < rounds; ++i) {
                auto r = co_await timeout(1s, s.read_owned(std::move(b)));
                auto [n, got] = std::move(r).value();
                auto [w, back] = co_await s.write_owned(std::move(got));
                b = std::move(back);
            }
        }(std::move(p->second), rounds));
        owned_buffer b = owned_buffer::copy_of(std::string(64, 'x'));
        for (int i = 0; i < rounds; ++i) {
            auto [w, back] = co_await p->first.write_owned(std::move(b));
            auto r = co_await timeout(1s, p->first.read_owned(std::move(back)));
            auto [n, got] = std::move(r).value();
            b = std::move(got);
        }
        co_await echo;
    }(rounds));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rounds / s;
}

// Reads that all time out (1 ms, nothing ever arrives): timeouts per second, and the cancels
// the driver had to send (io_worker_ring_handed_cancels counts only those handed across).
static double expiring(bool linked, int rounds, std::uint64_t& ops) {
    runtime rt(one_worker(linked));
    const auto t0 = std::chrono::steady_clock::now();
    rt.block_on([](int rounds) -> task<void> {
        auto p = unix_stream::pair();
        for (int i = 0; i < rounds; ++i) {
            auto r = co_await timeout(1ms, p->second.read_owned(owned_buffer(64)));
            if (!r.timed_out()) std::fprintf(stderr, "not timed out\n");
        }
    }(rounds));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ops = rt.metrics().io_worker_ring_submits;
    return rounds / s;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main() {
    std::vector<double> a, b, ea, eb;
    std::uint64_t sa = 0, sb = 0;
    for (int rep = 0; rep < 7; ++rep) {
        for (int k = 0; k < 2; ++k) {
            const bool linked = (rep + k) % 2 == 0;  // alternated, order flipped each repetition
            (linked ? a : b).push_back(pingpong(linked, 50000));
            std::uint64_t subs = 0;
            (linked ? ea : eb).push_back(expiring(linked, 300, subs));
            (linked ? sa : sb) = subs;
        }
    }
    std::printf("| measure | linked | not linked | linked/not |\n|---|---|---|---|\n");
    std::printf("| ping-pong round trips/s (reads under timeout(1 s), none fires) | %.0f | %.0f | %.3f |\n",
                median(a), median(b), median(a) / median(b));
    std::printf("| expiring reads/s (timeout(1 ms), every one fires) | %.0f | %.0f | %.3f |\n",
                median(ea), median(eb), median(ea) / median(eb));
    std::printf("| worker-ring submitting enters, 300 expiring reads (last rep) | %llu | %llu | |\n",
                (unsigned long long)sa, (unsigned long long)sb);
}
