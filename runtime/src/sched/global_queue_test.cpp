// SPDX-License-Identifier: MIT
// global_queue: FIFO, lock-free pushes and emptiness, fair-share batch size in one acquisition
// (G1, G2).

#include "sched/global_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "blitz_testing/queue_race.hpp"
#include "blitz_testing/test_support.hpp"

namespace blitz::detail {
namespace {

TEST(GlobalQueue, IsFifoAndCountsLength) {
    testing::header_pool pool(10);
    global_queue g;
    EXPECT_TRUE(g.empty());
    for (int i = 0; i < 10; ++i) g.push(pool.at(i));
    EXPECT_EQ(g.len(), 10u);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(g.pop(), pool.at(i));
    EXPECT_EQ(g.pop(), nullptr);
    EXPECT_TRUE(g.empty());
}

TEST(GlobalQueue, ShareIsLenOverWorkersClampedToFourAndSixtyFour) {
    testing::header_pool pool(2000);
    struct c {
        unsigned len, workers, want;
    };
    for (auto [len, workers, want] : {c{1, 4, 1}, c{3, 4, 3}, c{10, 4, 4}, c{100, 4, 25},
                                      c{1000, 4, 64}, c{1000, 16, 62}, c{2000, 1, 64}}) {
        global_queue g;
        for (unsigned i = 0; i < len; ++i) g.push(pool.at(i));
        task_header* out[300];
        auto before = g.lock_acquisitions();
        unsigned n = g.pop_share(out, 300, workers, 4, 64);
        EXPECT_EQ(n, want) << "len=" << len << " workers=" << workers;
        EXPECT_EQ(g.lock_acquisitions() - before, 1u);
        for (unsigned i = 0; i < n; ++i) EXPECT_EQ(out[i], pool.at(i));
        EXPECT_EQ(g.len(), len - n);
    }
}

TEST(GlobalQueue, ShareNeverExceedsRoom) {
    testing::header_pool pool(100);
    global_queue g;
    for (int i = 0; i < 100; ++i) g.push(pool.at(i));
    task_header* out[8];
    EXPECT_EQ(g.pop_share(out, 8, 1, 4, 64), 8u);
}

TEST(GlobalQueue, EmptyCheckTakesNoLock) {
    global_queue g;
    auto before = g.lock_acquisitions();
    task_header* out[4];
    EXPECT_EQ(g.pop_share(out, 4, 2, 4, 64), 0u);
    EXPECT_EQ(g.lock_acquisitions(), before);
}

// G1 (amended by issue 21): producers take no lock, whatever they push.
TEST(GlobalQueue, PushesTakeNoLock) {
    testing::header_pool pool(100);
    global_queue g;
    for (int i = 0; i < 50; ++i) g.push(pool.at(i));
    for (int i = 50; i < 99; ++i) task_access::queue_next(*pool.at(i)).store(pool.at(i + 1));
    g.push_batch(pool.at(50), pool.at(99), 50);
    EXPECT_EQ(g.lock_acquisitions(), 0u);
    EXPECT_EQ(g.push_operations(), 51u);
    EXPECT_EQ(g.len(), 100u);
    global_queue h;  // the control: pushes lock
    h.set_fault_locked_push(true);
    h.push(pool.at(0));
    EXPECT_EQ(h.lock_acquisitions(), 1u);
}

// The stub: the queue empties and refills many times, each time through the last node.
TEST(GlobalQueue, EmptiesAndRefillsThroughTheStub) {
    testing::header_pool pool(3);
    global_queue g;
    for (int round = 0; round < 100; ++round) {
        g.push(pool.at(0));
        EXPECT_EQ(g.pop(), pool.at(0));
        EXPECT_EQ(g.pop(), nullptr);
        g.push(pool.at(1));
        g.push(pool.at(2));
        EXPECT_EQ(g.pop(), pool.at(1));
        g.push(pool.at(0));
        EXPECT_EQ(g.pop(), pool.at(2));
        EXPECT_EQ(g.pop(), pool.at(0));
        EXPECT_TRUE(g.empty());
    }
}

// An overflow's batch (issue 21): its tasks come out in order, between the single pushes
// around it, across fetches that take part of it; it is handed back to its producer only when
// the last of them is taken.
TEST(GlobalQueue, ABatchKeepsItsPlaceAcrossPartialFetchesAndIsHandedBackWhenEmpty) {
    testing::header_pool pool(12);
    global_queue g;
    task_batch b;
    EXPECT_TRUE(b.reusable());
    g.push(pool.at(0));
    for (int i = 0; i < 10; ++i) b.items()[i] = pool.at(1 + i);
    b.carry(10);
    g.push_array(&b);
    g.push(pool.at(11));
    EXPECT_FALSE(b.reusable());
    EXPECT_EQ(g.len(), 12u);
    task_header* out[12];
    std::vector<task_header*> got;
    // Shares of 4, 4, 4: the second and third fetches each end part way through the batch.
    for (int f = 0; f < 3; ++f) {
        const auto locks = g.lock_acquisitions();
        const std::uint32_t n = g.pop_share(out, 4, 1, 1, 4);
        EXPECT_EQ(n, 4u);
        EXPECT_EQ(g.lock_acquisitions() - locks, 1u);  // G2: one acquisition per fetch
        got.insert(got.end(), out, out + n);
        EXPECT_EQ(b.reusable(), f == 2) << "after fetch " << f;
    }
    ASSERT_EQ(got.size(), 12u);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], pool.at(i));
    EXPECT_TRUE(g.empty());
    EXPECT_EQ(g.pop(), nullptr);
    // Reused: pushed again, it delivers its new tasks.
    b.items()[0] = pool.at(5);
    b.carry(1);
    g.push_array(&b);
    EXPECT_EQ(g.pop(), pool.at(5));
    EXPECT_TRUE(b.reusable());
}

// Producers racing consumers: every task once, each producer's in order (also under TSan in
// stress/queue_stress.cpp).
TEST(GlobalQueue, ProducersRacingConsumersDeliverEveryTaskOnceInOrder) {
    const auto r = testing::global_queue_race(4, 2, 20'000);
    EXPECT_EQ(r.fetched, 80'000u);
    EXPECT_EQ(r.lost, 0u);
    EXPECT_EQ(r.duplicates, 0u);
    EXPECT_EQ(r.out_of_order, 0u);
    EXPECT_TRUE(r.first.empty()) << r.first;
}

}  // namespace
}  // namespace blitz::detail
