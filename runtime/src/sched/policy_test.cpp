// SPDX-License-Identifier: MIT
// Victim choice (Q7) and the adaptive global-queue interval (G5).

#include "sched/policy.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "base/rng.hpp"

namespace blitz::detail {
namespace {

TEST(VictimWalk, VisitsEveryOtherWorkerOnceAndNeverSelf) {
    for (unsigned w : {2u, 3u, 4u, 8u, 16u, 64u}) {
        for (unsigned self = 0; self < w; ++self) {
            for (unsigned start = 0; start < w - 1; ++start) {
                std::set<unsigned> seen;
                for (unsigned i = 0; i < w - 1; ++i) {
                    unsigned v = nth_victim(self, start, i, w);
                    ASSERT_NE(v, self);
                    ASSERT_LT(v, w);
                    seen.insert(v);
                }
                ASSERT_EQ(seen.size(), w - 1u);
            }
        }
    }
}

// Chi-square goodness of fit of the first victim over 700,000 draws, 7 other workers: the
// statistic has 6 degrees of freedom; 22.46 is its 0.999 quantile. The seed is fixed, so the
// verdict is deterministic.
TEST(VictimWalk, FirstVictimIsUniformByChiSquare) {
    constexpr unsigned w = 8, self = 3, draws = 700'000;
    fast_rng rng(mix_seed(42));
    std::vector<unsigned> hits(w, 0);
    for (unsigned k = 0; k < draws; ++k) ++hits[nth_victim(self, rng.bounded(w - 1), 0, w)];
    EXPECT_EQ(hits[self], 0u);
    const double expected = double(draws) / (w - 1);
    double chi2 = 0;
    for (unsigned v = 0; v < w; ++v) {
        if (v == self) continue;
        chi2 += (hits[v] - expected) * (hits[v] - expected) / expected;
    }
    EXPECT_LT(chi2, 22.46);
}

// The negative control for the chi-square check: a biased choice (start ignoring the rng half the
// time) must fail it.
TEST(VictimWalk, ChiSquareDetectsABiasedChoice) {
    constexpr unsigned w = 8, self = 3, draws = 700'000;
    fast_rng rng(mix_seed(42));
    std::vector<unsigned> hits(w, 0);
    for (unsigned k = 0; k < draws; ++k) {
        unsigned start = (k % 2) ? rng.bounded(w - 1) : 0;
        ++hits[nth_victim(self, start, 0, w)];
    }
    const double expected = double(draws) / (w - 1);
    double chi2 = 0;
    for (unsigned v = 0; v < w; ++v) {
        if (v != self) chi2 += (hits[v] - expected) * (hits[v] - expected) / expected;
    }
    EXPECT_GT(chi2, 22.46);
}

TEST(FastRng, BoundedStaysInRangeAndZeroSeedIsUsable) {
    fast_rng r(0);
    std::set<std::uint32_t> distinct;
    for (int i = 0; i < 1000; ++i) {
        auto v = r.bounded(5);
        ASSERT_LT(v, 5u);
        distinct.insert(r.next());
    }
    EXPECT_GT(distinct.size(), 990u);
}

TEST(AdaptiveInterval, InitialAverageGivesTwenty) {
    EXPECT_EQ(interval_for(50'000, 1'000'000, 8, 255), 20u);
}

TEST(AdaptiveInterval, StaysWithinBounds) {
    for (double avg : {0.5, 1.0, 100.0, 3'921.0, 1e6, 1e9}) {
        unsigned iv = interval_for(avg, 1'000'000, 8, 255);
        EXPECT_GE(iv, 8u);
        EXPECT_LE(iv, 255u);
    }
    EXPECT_EQ(interval_for(1.0, 1'000'000, 8, 255), 255u);
    EXPECT_EQ(interval_for(1e7, 1'000'000, 8, 255), 8u);
}

TEST(AdaptiveInterval, ConvergesWithinTwentyTicksAfterAStepChange) {
    // From the initial 50 us to 10 us polls. After 20 EWMA steps at most 0.9^20 = 12.2% of the
    // gap remains, so the interval is within a few polls of 1 ms / 14.9 us = 67, heading for 100.
    double avg = 50'000;
    for (int tick = 0; tick < 20; ++tick) avg = ewma_step(avg, 10'000, 0.1);
    EXPECT_LE((avg - 10'000) / 40'000, 0.1216);
    unsigned iv = interval_for(avg, 1'000'000, 8, 255);
    EXPECT_GE(iv, 67u);
    EXPECT_LE(iv, 100u);
    // A step up to 200 us polls: the target interval 5 is clamped to the floor of 8.
    for (int tick = 0; tick < 20; ++tick) avg = ewma_step(avg, 200'000, 0.1);
    EXPECT_LE(interval_for(avg, 1'000'000, 8, 255), 8u);
}

}  // namespace
}  // namespace blitz::detail
