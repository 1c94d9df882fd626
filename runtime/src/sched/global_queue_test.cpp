// SPDX-License-Identifier: MIT
// global_queue: FIFO, lock-free emptiness, fair-share batch size in one acquisition (G1, G2).

#include "sched/global_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace blitz::detail
