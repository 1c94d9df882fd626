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
    EXPECT_EQ(s.bitmap_word(0), (1ull << 2) | (1ull << 5) | (1ull << 7));
    EXPECT_TRUE(s.should_notify());
    EXPECT_EQ(s.claim_parked()->index, 2u);
    EXPECT_EQ(s.num_searching(), 1u);
    EXPECT_FALSE(s.should_notify());  // I3: a searcher exists now
    EXPECT_EQ(s.num_parked(), 2u);
    EXPECT_EQ(s.num_parked(), unsigned(std::popcount(s.bitmap_word(0))));
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
// agree with the bitmap at the end. `w` workers, all parked, claimed by four threads.
void concurrent_claims(unsigned w, int rounds) {
    for (int round = 0; round < rounds; ++round) {
        idle_state s(w, true);
        for (unsigned i = 0; i < w; ++i) s.mark_parked(i, false);
        std::vector<std::atomic<int>> claimed(w);
        std::vector<std::thread> ts;
        for (int k = 0; k < 4; ++k) {
            ts.emplace_back([&] {
                while (auto c = s.claim_parked()) claimed[c->index].fetch_add(1);
            });
        }
        for (auto& t : ts) t.join();
        for (unsigned i = 0; i < w; ++i) ASSERT_EQ(claimed[i].load(), 1);
        EXPECT_EQ(s.num_parked(), 0u);
        for (unsigned k = 0; k < s.bitmap_words(); ++k) EXPECT_EQ(s.bitmap_word(k), 0u);
        EXPECT_EQ(s.num_searching(), w);
    }
}

TEST(IdleState, ConcurrentClaimsNeverClaimOneWorkerTwice) { concurrent_claims(64, 200); }

TEST(IdleState, ClaimAcrossWordsTakesTheLowestParkedWorker) {
    idle_state s(256, true);
    ASSERT_EQ(s.bitmap_words(), 4u);
    s.mark_parked(200, false);
    s.mark_parked(70, false);
    s.mark_parked(130, false);
    s.mark_parked(71, false);
    EXPECT_EQ(s.num_parked(), 4u);
    EXPECT_EQ(s.bitmap_word(0), 0u);
    EXPECT_EQ(s.bitmap_word(1), (1ull << 6) | (1ull << 7));
    EXPECT_EQ(s.bitmap_word(2), 1ull << 2);
    EXPECT_EQ(s.bitmap_word(3), 1ull << 8);
    EXPECT_EQ(s.summary(), 0b1110u);
    for (unsigned want : {70u, 71u, 130u, 200u}) {
        const auto c = s.claim_parked();
        ASSERT_TRUE(c.has_value());
        EXPECT_EQ(c->index, want);
        EXPECT_EQ(c->index % 64, unsigned(std::countr_zero(c->chosen_from)));
    }
    EXPECT_FALSE(s.claim_parked().has_value());
    EXPECT_EQ(s.num_parked(), 0u);
    EXPECT_EQ(s.num_searching(), 4u);
    EXPECT_EQ(s.summary(), 0u);  // every emptied word's summary bit cleared by the last claims
}

TEST(IdleState, AStaleSummaryBitIsClearedAndAWordFilledAgainIsFound) {
    idle_state s(128, true);
    s.mark_parked(64, false);
    EXPECT_TRUE(s.unmark_parked(64));  // a timeout wake: the summary bit stays, the word is empty
    EXPECT_EQ(s.summary(), 0b10u);
    EXPECT_FALSE(s.claim_parked().has_value());
    EXPECT_EQ(s.summary(), 0u);  // the claimer that found the word empty cleared it
    s.mark_parked(65, false);
    EXPECT_EQ(s.summary(), 0b10u);
    EXPECT_EQ(s.claim_parked()->index, 65u);
}

TEST(IdleState, SixtyFourWorkersKeepOneWordAndNoSummary) {
    idle_state s(64, true);
    EXPECT_EQ(s.bitmap_words(), 1u);
    s.mark_parked(63, false);
    EXPECT_EQ(s.bitmap_word(0), 1ull << 63);
    EXPECT_EQ(s.claim_parked()->index, 63u);
    EXPECT_EQ(idle_state(65, true).bitmap_words(), 2u);
    EXPECT_EQ(idle_state(idle_state::max_workers, true).bitmap_words(), idle_state::max_words);
}

TEST(IdleState, ConcurrentClaimsAcrossWordsNeverClaimOneWorkerTwice) {
    concurrent_claims(256, 100);
}

// Parkers in several words race claimers that clear stale summary bits (left by timeout
// wakes): no park is ever hidden from claimers. Each parker parks, then either is claimed or
// wakes by "timeout"; after everyone stops, a claim must still find every worker left parked,
// and every park ends exactly once (claimed or timed out).
TEST(IdleState, ParksRacingSummaryClearsAreNeverHidden) {
    constexpr unsigned w = 320, parkers = 4;
    for (int round = 0; round < 10; ++round) {
        idle_state s(w, true);
        std::atomic<bool> stop{false};
        std::atomic<std::uint64_t> claimed{0}, parks{0}, timeouts{0};
        std::vector<std::thread> ts;
        for (unsigned p = 0; p < parkers; ++p) {
            ts.emplace_back([&, p] {
                // Worker index p * 64 + 5 (one per word), so each word goes empty and full.
                const unsigned i = p * 64 + 5 + (p % 2) * 60;
                for (int n = 0; n < 200; ++n) {
                    s.mark_parked(i, false);
                    parks.fetch_add(1);
                    if (n % 3 == 0 && s.unmark_parked(i)) {
                        timeouts.fetch_add(1);
                        continue;
                    }
                    // Claimed (or about to be): wait until the bit is gone.
                    while ((s.bitmap_of(i) >> (i % 64)) & 1) std::this_thread::yield();
                }
            });
        }
        std::vector<std::thread> cs;
        for (int k = 0; k < 2; ++k) {
            cs.emplace_back([&] {
                while (!stop.load()) {
                    if (s.claim_parked()) claimed.fetch_add(1);
                }
            });
        }
        for (auto& t : ts) t.join();
        stop.store(true);
        for (auto& t : cs) t.join();
        while (s.claim_parked()) claimed.fetch_add(1);
        EXPECT_EQ(claimed.load() + timeouts.load(), parks.load());
        EXPECT_EQ(s.num_parked(), 0u);
        for (unsigned k = 0; k < s.bitmap_words(); ++k) EXPECT_EQ(s.bitmap_word(k), 0u);
    }
}

}  // namespace
}  // namespace blitz::detail
