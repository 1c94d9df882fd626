// SPDX-License-Identifier: MIT
// Issue 13: exactly-once under cancellation, also under ThreadSanitizer. Producers send counted
// payloads into two bounded channels while consumers receive through select (two receives and a
// short sleep), timeout around a receive, and plain recv; a controller aborts consumers at
// random and scopes are dropped by timeouts. At the end: every payload was delivered at most
// once, sent == delivered + left in the channels, a receiver that saw the end never finds a
// value afterwards, and every payload object was destroyed exactly once.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/counted_payload.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

using payload = workloads::counted_payload;

struct tally {
    std::vector<std::atomic<std::uint8_t>> seen;
    std::atomic<long> delivered{0}, duplicates{0}, end_with_value{0};
    explicit tally(std::size_t n) : seen(n) {}
    void got(const payload& p) {
        delivered.fetch_add(1);
        if (seen[p.id].fetch_add(1) != 0) duplicates.fetch_add(1);
    }
};

task<void> consumer(receiver<payload> a, receiver<payload> b, tally& t, std::uint32_t seed) {
    std::minstd_rand rng(seed);
    bool a_open = true, b_open = true;
    while (a_open || b_open) {
        const unsigned mode = rng() % 3;
        if (mode == 0 && a_open && b_open) {
            auto r =
                co_await select(a.recv(), b.recv(), sleep(std::chrono::microseconds(rng() % 300)));
            if (r.index() == 0) {
                if (auto& v = std::get<0>(r))
                    t.got(*v);
                else
                    a_open = false;
            } else if (r.index() == 1) {
                if (auto& v = std::get<1>(r))
                    t.got(*v);
                else
                    b_open = false;
            }
        } else {
            receiver<payload>& rx = (a_open && (!b_open || rng() % 2)) ? a : b;
            auto r = co_await timeout(std::chrono::microseconds(rng() % 500), rx.recv());
            if (r.timed_out()) continue;
            if (auto& v = r.value()) {
                t.got(*v);
            } else {
                // The end: all senders are gone and nothing can come back, so nothing is left.
                if (rx.try_recv().has_value()) t.end_with_value.fetch_add(1);
                (&rx == &a ? a_open : b_open) = false;
            }
        }
    }
}

// A send that waits a whole second ends the producer, so a defect that leaves unreachable values
// filling a channel is reported as lost values rather than as a hang. A correct run never waits
// that long, and an unsent value is not counted as sent: the limit cannot change a verdict.
task<void> producer(sender<payload> a, sender<payload> b, std::uint32_t first, std::uint32_t n,
                    std::atomic<long>& sent) {
    for (std::uint32_t i = 0; i < n; ++i) {
        auto& tx = (i % 2) ? a : b;
        auto r = co_await timeout(std::chrono::seconds(1), tx.send(payload(first + i)));
        if (r.timed_out()) co_return;
        if (r.value().sent()) sent.fetch_add(1);
    }
}

class CancelStress : public ::testing::TestWithParam<unsigned> {};

TEST_P(CancelStress, EveryValueDeliveredOnceOrLeftUnderAbortSelectAndTimeout) {
    config c;
    c.workers = GetParam();
    const std::uint32_t producers = 4, per = static_cast<std::uint32_t>(500 * stress::scale());
    tally t(static_cast<std::size_t>(producers) * per);
    std::atomic<long> sent{0};
    long left = 0;
    {
        runtime rt(c);
        auto [ta, ra] = channel<payload>(3);
        auto [tb, rb] = channel<payload>(2);
        std::vector<join_handle<void>> prods, cons;
        for (std::uint32_t p = 0; p < producers; ++p) {
            prods.push_back(rt.spawn(producer(ta, tb, p * per, per, sent)));
        }
        {
            auto drop_a = std::move(ta);
            auto drop_b = std::move(tb);
        }
        std::minstd_rand rng(7);
        for (int round = 0; round < 40; ++round) {
            for (int k = 0; k < 3; ++k) cons.push_back(rt.spawn(consumer(ra, rb, t, rng())));
            std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 800));
            for (auto& h : cons) {
                if (rng() % 2) h.abort();
            }
        }
        // One that is never aborted drains; it starts before the producers are joined, since every
        // other consumer may have been aborted while a producer waits for room.
        cons.push_back(rt.spawn(consumer(ra, rb, t, 1)));
        for (auto& h : prods) h.join();
        for (auto& h : cons) {
            try {
                h.join();
            } catch (const task_cancelled&) {
            }
        }
        while (ra.try_recv()) ++left;
        while (rb.try_recv()) ++left;
    }
    EXPECT_EQ(t.duplicates.load(), 0);
    EXPECT_EQ(t.end_with_value.load(), 0);
    EXPECT_EQ(sent.load(), t.delivered.load() + left);
    EXPECT_EQ(left, 0);                  // the last consumer drained both channels
    EXPECT_EQ(payload::live.load(), 0);  // every payload destroyed exactly once
}

INSTANTIATE_TEST_SUITE_P(Workers, CancelStress, ::testing::Values(1u, 2u, 4u, 8u));

}  // namespace
}  // namespace blitz
