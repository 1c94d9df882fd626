// SPDX-License-Identifier: MIT
// idle_state: searcher cap (I1), parked bitmap and ctz claim (I2, I3), wake reasons (I6).

#include "sched/idle_state.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <thread>
#include <vector>

namespace blitz::detail {
namespace {

TEST(IdleState, SearcherCapAdmitsWhileTwiceSearchingIsBelowWorkers) {
    idle_state s(4, /*limit_searchers=*/true);
    EXPECT_TRUE(s.try_become_searcher().admitted);   // 0 -> 1
    EXPECT_TRUE(s.try_become_searcher().admitted);   // 2*1 < 4
    EXPECT_FALSE(s.try_become_searcher().admitted);  // 2*2 >= 4
    EXPECT_EQ(s.num_searching(), 2u);
    EXPECT_FALSE(s.transition_from_searching());
    EXPECT_TRUE(s.transition_from_searching());  // the last one
    EXPECT_EQ(s.num_searching(), 0u);
    EXPECT_EQ(s.overshoots(), 0u);
}

TEST(IdleState, CapOffAdmitsEveryone) {
    idle_state s(4, /*limit_searchers=*/false);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(s.try_become_searcher().admitted);
    EXPECT_EQ(s.num_searching(), 4u);
}

TEST(IdleState, ClaimTakesTheLowestParkedWorkerAndMakesItASearcher) {
    idle_state s(8, true);
    EXPECT_FALSE(s.mark_parked(5, false));
    EXPECT_FALSE(s.mark_parked(2, false));
    EXPECT_FALSE(s.mark_parked(7, false));
    EXPECT_EQ(s.num_parked(), 3u);
    EXPECT_EQ(s.bitmap(), (1ull << 2) | (1ull << 5) | (1ull << 7));
    EXPECT_TRUE(s.should_notify());
    EXPECT_EQ(s.claim_parked()->index, 2u);
    EXPECT_EQ(s.num_searching(), 1u);
    EXPECT_FALSE(s.should_notify());  // I3: a searcher exists now
    EXPECT_EQ(s.num_parked(), 2u);
    EXPECT_EQ(s.num_parked(), unsigned(std::popcount(s.bitmap())));
    EXPECT_EQ(s.claims(), 1u);
}

TEST(IdleState, WakeReasonFollowsTheBit) {
    idle_state s(4, true);
    s.mark_parked(1, false);
    EXPECT_TRUE(s.unmark_parked(1));  // bit still set: timeout wake, not a searcher
    EXPECT_EQ(s.num_parked(), 0u);
    s.mark_parked(1, false);
    EXPECT_EQ(s.claim_parked()->index, 1u);
    EXPECT_FALSE(s.unmark_parked(1));  // claimed: the claimer made it a searcher
    EXPECT_EQ(s.num_searching(), 1u);
}

TEST(IdleState, LastSearcherParkingIsReported) {
    idle_state s(4, true);
    ASSERT_TRUE(s.try_become_searcher().admitted);
    ASSERT_TRUE(s.try_become_searcher().admitted);
    EXPECT_FALSE(s.mark_parked(0, true));
    EXPECT_TRUE(s.mark_parked(1, true));
    EXPECT_EQ(s.num_searching(), 0u);
}

// Concurrent claimers and parkers: each parked worker is claimed at most once, and the counts
// agree with the bitmap at the end.
TEST(IdleState, ConcurrentClaimsNeverClaimOneWorkerTwice) {
    constexpr unsigned w = 64;
    for (int round = 0; round < 200; ++round) {
        idle_state s(w, true);
        for (unsigned i = 0; i < w; ++i) s.mark_parked(i, false);
        std::vector<std::atomic<int>> claimed(w);
        std::vector<std::thread> ts;
        for (int k = 0; k < 4; ++k) {
            ts.emplace_back([&] {
                while (auto i = s.claim_parked()) claimed[i->index].fetch_add(1);
            });
        }
        for (auto& t : ts) t.join();
        for (unsigned i = 0; i < w; ++i) ASSERT_EQ(claimed[i].load(), 1);
        EXPECT_EQ(s.num_parked(), 0u);
        EXPECT_EQ(s.bitmap(), 0u);
        EXPECT_EQ(s.num_searching(), w);
    }
}

}  // namespace
}  // namespace blitz::detail
