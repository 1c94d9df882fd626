// SPDX-License-Identifier: MIT
// The per-thread cache of task blocks (task_header.cpp): a worker keeps only its base, a thread
// outside the runtime keeps a burst of freed blocks beyond it, charged to one shared budget that
// every such thread's blocks count against and that is refunded as blocks leave.

#include <gtest/gtest.h>

#include <cstddef>
#include <latch>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz/detail/task_header.hpp"
#include "task/block_cache_info.hpp"

namespace blitz::detail {
namespace {

namespace info = block_cache_info;

// Under AddressSanitizer the cache is off (every block goes back to the heap, so that a use
// after free faults): there is nothing to observe.
#define SKIP_WITHOUT_CACHE() \
    if (!info::enabled()) GTEST_SKIP() << "the block cache is off under AddressSanitizer"

std::vector<void*> take_blocks(std::size_t n, std::size_t bytes) {
    std::vector<void*> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(cached_alloc(bytes));
    return v;
}

void give_blocks(std::vector<void*>& v, std::size_t bytes) {
    for (void* p : v) cached_free(p, bytes);
    v.clear();
}

TEST(BlockCache, APlainThreadKeepsABurstOfFreedBlocksBeyondItsBaseAndRefundsItsCharge) {
    SKIP_WITHOUT_CACHE();
    constexpr std::size_t bytes = 128, n = 2000;
    const std::size_t charged_before = info::wide_charged();
    std::thread([&] {
        const std::size_t held_before = info::held(bytes);
        auto blocks = take_blocks(n, bytes);
        give_blocks(blocks, bytes);
        const std::size_t held = info::held(bytes);
        EXPECT_EQ(held, held_before + n);
        // What lies beyond the base is charged, block for block.
        EXPECT_EQ(info::wide_charged() - charged_before, (held - info::base_per_class()) * bytes);
        blocks = take_blocks(n, bytes);  // all from the cache: beyond the base goes first
        EXPECT_EQ(info::held(bytes), held_before);
        EXPECT_EQ(info::wide_charged(), charged_before);
        give_blocks(blocks, bytes);  // and keep them: the thread's exit refunds the charge
    }).join();
    EXPECT_EQ(info::wide_charged(), charged_before);
}

TEST(BlockCache, AWorkerKeepsOnlyItsBase) {
    SKIP_WITHOUT_CACHE();
    constexpr std::size_t bytes = 128, n = 2000;
    const std::size_t charged_before = info::wide_charged();
    config c;
    c.workers = 1;
    runtime rt(c);
    const std::size_t held = rt.block_on([]() -> task<std::size_t> {
        auto blocks = take_blocks(n, bytes);
        give_blocks(blocks, bytes);
        co_return info::held(bytes);
    }());
    EXPECT_LE(held, info::base_per_class());
    EXPECT_EQ(info::wide_charged(), charged_before);
}

// Threads outside the runtime free more than the budget between them, concurrently (run under
// ThreadSanitizer too): what they keep beyond their bases never passes it, the rest goes back
// to the heap, and their exits refund every charge.
TEST(BlockCache, TheSharedBudgetBoundsWhatPlainThreadsKeepBeyondTheirBases) {
    SKIP_WITHOUT_CACHE();
    constexpr std::size_t bytes = 1024;  // the largest class: the budget is reached sooner
    const std::size_t charged_before = info::wide_charged();
    const std::size_t per_thread = info::wide_budget() / bytes / 2 + 1000;
    std::vector<std::thread> threads;
    std::vector<std::size_t> held(2, 0);
    std::latch counted(2);  // both count what they keep before either exits and is refunded
    for (std::size_t t = 0; t < 2; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 3; ++round) {
                auto blocks = take_blocks(per_thread, bytes);
                for (void* p : blocks) {
                    cached_free(p, bytes);
                    EXPECT_LE(info::wide_charged(), info::wide_budget());
                }
            }
            held[t] = info::held(bytes);
            counted.arrive_and_wait();
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_LE(held[0] + held[1], 2 * info::base_per_class() + info::wide_budget() / bytes);
    EXPECT_GT(held[0] + held[1], 2 * info::base_per_class());  // the budget was used
    EXPECT_EQ(info::wide_charged(), charged_before);
}

}  // namespace
}  // namespace blitz::detail
