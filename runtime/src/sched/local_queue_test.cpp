// SPDX-License-Identifier: MIT
// Unit tests for local_queue (INVARIANTS Q1-Q6).

#include "sched/local_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "blitz_testing/test_support.hpp"
#include "sched/global_queue.hpp"

namespace blitz::detail {
namespace {

using testing::header_pool;

class LocalQueueAt : public ::testing::TestWithParam<std::uint32_t> {};

// Start indices: zero, and just below the 2^32 wrap (Q2).
INSTANTIATE_TEST_SUITE_P(Starts, LocalQueueAt,
                         ::testing::Values(0u, 0xFFFFFFFFu - 10, 0xFFFFFFFFu - 300));

TEST_P(LocalQueueAt, PopsInFifoOrderAcrossTheIndexWrap) {
    header_pool pool(1000);
    global_queue g;
    local_queue q(GetParam());
    std::size_t next_out = 0;
    for (std::size_t round = 0; round < 4; ++round) {
        for (std::size_t i = 0; i < 200; ++i) {
            EXPECT_EQ(q.push(pool.at(round * 200 + i), g).overflowed, 0u);
        }
        EXPECT_EQ(q.len(), 200u);
        for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ(q.pop(), pool.at(next_out++));
        EXPECT_EQ(q.pop(), nullptr);
    }
    EXPECT_TRUE(g.empty());
}

TEST_P(LocalQueueAt, LengthNeverExceedsCapacityAndFullRingOverflowsHalfInOnePush) {
    header_pool pool(300);
    global_queue g;
    local_queue q(GetParam());
    for (std::uint32_t i = 0; i < local_queue::capacity; ++i) {
        ASSERT_EQ(q.push(pool.at(i), g).overflowed, 0u);
    }
    EXPECT_EQ(q.len(), local_queue::capacity);
    const auto pushes_before = g.push_operations();
    const auto locks_before = g.lock_acquisitions();
    // Q4: the 257th push moves the 128 oldest plus the new task in one push (which, since
    // issue 21, takes no lock).
    EXPECT_EQ(q.push(pool.at(256), g).overflowed, 129u);
    EXPECT_EQ(g.push_operations() - pushes_before, 1u);
    EXPECT_EQ(g.lock_acquisitions(), locks_before);
    EXPECT_EQ(g.len(), 129u);
    EXPECT_EQ(q.len(), 128u);
    for (std::uint32_t i = 0; i < 128; ++i) EXPECT_EQ(g.pop(), pool.at(i));
    EXPECT_EQ(g.pop(), pool.at(256));
    for (std::uint32_t i = 128; i < 256; ++i) EXPECT_EQ(q.pop(), pool.at(i));
    EXPECT_EQ(q.pop(), nullptr);
}

// Overflows travel as arrays (issue 21): a ring reuses its oldest batch once a fetch has
// emptied it, allocates another while the ones it has are still queued, and trims back to a few
// when idle.
TEST(LocalQueue, OverflowBatchesAreReusedWhenFetchedAndTrimmedWhenIdle) {
    header_pool pool(10 * 129 + local_queue::capacity);
    global_queue g;
    local_queue q;
    std::size_t next = 0;
    for (std::uint32_t i = 0; i < local_queue::capacity; ++i) q.push(pool.at(next++), g);
    // Ten overflows with nothing fetched: ten batches.
    for (int k = 0; k < 10; ++k) {
        EXPECT_EQ(q.push(pool.at(next++), g).overflowed, 129u);
        for (std::uint32_t i = 0; i < 128; ++i) q.push(pool.at(next++), g);  // full again
    }
    EXPECT_EQ(q.batches(), 10u);
    q.trim_batches();
    EXPECT_EQ(q.batches(), 10u);  // all still queued: none may go
    // Fetch the first batch's tasks in full: the next overflow reuses it.
    task_header* out[129];
    EXPECT_EQ(g.pop_share(out, 129, 1, 129, 129), 129u);
    EXPECT_EQ(out[0], pool.at(0));
    EXPECT_EQ(q.push(pool.at(0), g).overflowed, 129u);  // the ring is full: any task will do
    EXPECT_EQ(q.batches(), 10u);
    // Drain everything: trimming leaves the kept few.
    while (g.pop() != nullptr) {
    }
    q.trim_batches();
    EXPECT_EQ(q.batches(), 8u);
}

TEST_P(LocalQueueAt, StealTakesCeilHalfAndReturnsTheFirstStolenTask) {
    header_pool pool(300);
    global_queue g;
    for (std::uint32_t n : {1u, 2u, 3u, 7u, 100u, 255u, 256u}) {
        local_queue victim(GetParam()), thief(GetParam() + 77);
        for (std::uint32_t i = 0; i < n; ++i) victim.push(pool.at(i), g);
        auto r = victim.steal_into(thief, 128);
        const std::uint32_t want = std::min(n - n / 2, 128u);  // Q5
        EXPECT_EQ(r.taken, want) << "n=" << n;
        EXPECT_EQ(r.available, n);
        EXPECT_EQ(r.first, pool.at(0));
        EXPECT_EQ(thief.len(), want - 1);
        EXPECT_EQ(victim.len(), n - want);
        for (std::uint32_t i = 1; i < want; ++i) EXPECT_EQ(thief.pop(), pool.at(i));
        for (std::uint32_t i = want; i < n; ++i) EXPECT_EQ(victim.pop(), pool.at(i));
        EXPECT_FALSE(victim.steal_in_progress());
    }
}

TEST(LocalQueue, StealNeverExceedsTheThiefsFreeSpaceOrTheLimit) {
    header_pool pool(600);
    global_queue g;
    local_queue victim, thief;
    for (std::uint32_t i = 0; i < 256; ++i) victim.push(pool.at(i), g);
    for (std::uint32_t i = 0; i < 250; ++i) thief.push(pool.at(300 + i), g);  // 6 free slots
    auto r = victim.steal_into(thief, 128);
    EXPECT_EQ(r.taken, 7u);  // 6 stored + 1 returned
    EXPECT_EQ(thief.len(), 256u);
    local_queue thief2;
    auto r2 = victim.steal_into(thief2, 5);
    EXPECT_EQ(r2.taken, 5u);
}

TEST(LocalQueue, StealFromEmptyFindsNothing) {
    local_queue victim, thief;
    auto r = victim.steal_into(thief, 128);
    EXPECT_EQ(r.first, nullptr);
    EXPECT_EQ(r.taken, 0u);
}

TEST(LocalQueue, StealAllControlTakesEverythingUpToTheLimit) {
    header_pool pool(10);
    global_queue g;
    local_queue victim, thief;
    for (std::uint32_t i = 0; i < 10; ++i) victim.push(pool.at(i), g);
    auto r = victim.steal_into(thief, 128, /*steal_all=*/true);
    EXPECT_EQ(r.taken, 10u);  // a deliberate Q5 violation, for the negative control
}

TEST(LocalQueue, PushIntoAFullRingDuringAStealGoesToTheGlobalQueueAlone) {
    header_pool pool(300);
    global_queue g;
    local_queue q;
    for (std::uint32_t i = 0; i < 256; ++i) q.push(pool.at(i), g);
    task_header* claimed[4];
    ASSERT_EQ(q.debug_claim(4, claimed), 4u);  // a thief paused between claim and release
    EXPECT_TRUE(q.steal_in_progress());
    // The claimed slots are not free yet: the ring is still full as far as the owner may write.
    const auto pushes = g.push_operations();
    EXPECT_EQ(q.push(pool.at(256), g).overflowed, 1u);  // Q4: only the new task moves
    EXPECT_EQ(g.push_operations() - pushes, 1u);
    EXPECT_EQ(g.len(), 1u);
    EXPECT_EQ(g.pop(), pool.at(256));
    // Q5: a second thief sees the steal in progress and backs off.
    local_queue thief;
    EXPECT_EQ(q.steal_into(thief, 128).taken, 0u);
    // The owner can still pop past the claimed tasks while the steal is in progress.
    EXPECT_EQ(q.pop(), pool.at(4));
    q.debug_release();
    EXPECT_FALSE(q.steal_in_progress());
    // Room again: the next push lands in the ring.
    EXPECT_EQ(q.push(pool.at(257), g).overflowed, 0u);
    EXPECT_EQ(claimed[0], pool.at(0));
    EXPECT_EQ(claimed[3], pool.at(3));
}

// Q6: the owner pushes and pops while thieves steal; every task comes out exactly once.
TEST_P(LocalQueueAt, ConservationUnderConcurrentOwnerAndThieves) {
    constexpr std::size_t total = 200'000;
    constexpr int thieves = 3;
    header_pool pool(total);
    global_queue g;
    local_queue owner_q(GetParam());
    std::vector<std::atomic<std::uint8_t>> seen(total);
    std::atomic<bool> done{false};
    std::atomic<std::size_t> taken{0};

    auto record = [&](task_header* t) {
        seen[pool.index_of(t)].fetch_add(1, std::memory_order_relaxed);
        taken.fetch_add(1, std::memory_order_relaxed);
    };
    std::vector<std::thread> ts;
    for (int k = 0; k < thieves; ++k) {
        ts.emplace_back([&, k] {
            local_queue mine(GetParam() + 1000 * k);
            while (!done.load(std::memory_order_acquire) || !owner_q.empty()) {
                auto r = owner_q.steal_into(mine, 128);
                if (r.first) record(r.first);
                while (task_header* t = mine.pop()) record(t);
                if (k == 0) {
                    // Also a consumer of the overflows, 7 tasks at a time: batches are taken
                    // in parts and handed back while the owner overflows into them again.
                    task_header* out[7];
                    const std::uint32_t n = g.pop_share(out, 7, 1, 1, 7);
                    for (std::uint32_t i = 0; i < n; ++i) record(out[i]);
                }
            }
        });
    }
    std::size_t pushed = 0;
    unsigned x = 12345;
    while (pushed < total) {
        x = x * 1103515245 + 12345;
        std::size_t burst = 1 + (x >> 16) % 300;
        for (std::size_t i = 0; i < burst && pushed < total; ++i) {
            owner_q.push(pool.at(pushed++), g);
        }
        std::size_t pops = (x >> 8) % 200;
        for (std::size_t i = 0; i < pops; ++i) {
            if (task_header* t = owner_q.pop())
                record(t);
            else
                break;
        }
    }
    while (task_header* t = owner_q.pop()) record(t);
    done.store(true, std::memory_order_release);
    for (auto& t : ts) t.join();
    while (task_header* t = g.pop()) record(t);

    EXPECT_EQ(taken.load(), total);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < total; ++i) bad += seen[i].load() != 1;
    EXPECT_EQ(bad, 0u) << "tasks lost or duplicated";
}

}  // namespace
}  // namespace blitz::detail
