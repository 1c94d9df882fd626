// SPDX-License-Identifier: MIT
// parker: tokens are never lost (I5).

#include "sched/parker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace blitz::detail {
namespace {

using namespace std::chrono_literals;

TEST(Parker, UnparkBeforeParkLeavesATokenThatParkConsumes) {
    parker p;
    p.unpark();
    EXPECT_TRUE(p.park(10s));
    EXPECT_FALSE(p.try_consume());
}

TEST(Parker, TokensDoNotAccumulate) {
    parker p;
    p.unpark();
    p.unpark();
    EXPECT_TRUE(p.park(10s));
    EXPECT_FALSE(p.park(1ms));  // the second unpark did not store a second token
}

TEST(Parker, TimesOutWithoutAToken) { EXPECT_FALSE(parker{}.park(1ms)); }

// An unpark racing a park is never lost: with a 30 s timeout, a lost token would show up as a
// `false` from park (and a very slow test), never as a pass.
TEST(Parker, UnparkRacingParkIsNeverLost) {
    parker p;
    std::atomic<int> round{0};
    constexpr int rounds = 2000;
    std::thread waker([&] {
        for (int r = 0; r < rounds; ++r) {
            while (round.load(std::memory_order_acquire) != r) std::this_thread::yield();
            p.unpark();
        }
    });
    int woken = 0;
    for (int r = 0; r < rounds; ++r) {
        round.store(r, std::memory_order_release);
        woken += p.park(30s);
    }
    waker.join();
    EXPECT_EQ(woken, rounds);
}

}  // namespace
}  // namespace blitz::detail
