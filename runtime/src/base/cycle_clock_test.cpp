// SPDX-License-Identifier: MIT
// cycle_clock: the TSC path agrees with steady_clock, the fallback is steady_clock, and
// differences never go below zero.

#include "base/cycle_clock.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

namespace blitz::detail {
namespace {

using namespace std::chrono_literals;

// How far `c` and steady_clock disagree over about 20 ms, as a fraction of the interval: the
// best of three tries, so a preemption between two paired reads does not decide it.
double disagreement(const cycle_clock& c) {
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
        const std::int64_t s0 = cycle_clock::steady_ns(), c0 = c.now();
        std::this_thread::sleep_for(20ms);
        const std::int64_t c1 = c.now(), s1 = cycle_clock::steady_ns();
        const double d = std::abs(double(c1 - c0) - double(s1 - s0)) / double(s1 - s0);
        best = std::min(best, d);
    }
    return best;
}

TEST(CycleClock, TheProcessClockAgreesWithSteadyClock) {
    const cycle_clock c = cycle_clock::process();
    if (cycle_clock::invariant_tsc() && cycle_clock::kernel_trusts_tsc()) {
        // The development VM has both; a calibration that fell back would go unnoticed.
        EXPECT_TRUE(c.uses_tsc());
    }
    // Within 5%: G5 and G8 need the rate, not the nanosecond.
    EXPECT_LT(disagreement(c), 0.05) << "ns per tick " << c.ns_per_tick();
}

TEST(CycleClock, TheFallbackIsSteadyClock) {
    const cycle_clock c = cycle_clock::steady();
    EXPECT_FALSE(c.uses_tsc());
    const std::int64_t before = cycle_clock::steady_ns();
    const std::int64_t reading = c.now();
    EXPECT_GE(reading, before);
    EXPECT_LE(reading, cycle_clock::steady_ns());
}

TEST(CycleClock, ReadingsDoNotGoBackOnOneThread) {
    const cycle_clock c = cycle_clock::process();
    std::int64_t last = c.now();
    for (int i = 0; i < 100'000; ++i) {
        const std::int64_t now = c.now();
        ASSERT_GE(now, last);
        last = now;
    }
}

TEST(CycleClock, SinceIsNeverBelowZero) {
    EXPECT_EQ(cycle_clock::since(100, 40), 0u);  // a reading on a CPU whose counter lags
    EXPECT_EQ(cycle_clock::since(40, 100), 60u);
    const std::int64_t long_ago = std::numeric_limits<std::int64_t>::min() / 2;
    EXPECT_EQ(cycle_clock::since(long_ago, 0), std::uint64_t{1} << 62);  // the first check is due
}

}  // namespace
}  // namespace blitz::detail
