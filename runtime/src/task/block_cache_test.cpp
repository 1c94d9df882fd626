// SPDX-License-Identifier: MIT
// The per-thread cache of task blocks (task_header.cpp): a worker keeps only its base, a thread
// outside the runtime keeps a burst of freed blocks beyond it, charged to one shared budget that
// every such thread's blocks count against and that is refunded as blocks leave; and what a
// worker has no room for goes back to the thread that allocated it (its home), or to the heap
// once that thread has exited.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <latch>
#include <mutex>
#include <set>
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
        EXPECT_EQ(info::wide_charged() - charged_before,
                  (held - info::base_per_class()) * info::block_size(bytes));
        blocks = take_blocks(n, bytes);  // all from the cache: beyond the base goes first
        EXPECT_EQ(info::held(bytes), held_before);
        EXPECT_EQ(info::wide_charged(), charged_before);
        give_blocks(blocks, bytes);  // and keep them: the thread's exit refunds the charge
    }).join();
    EXPECT_EQ(info::wide_charged(), charged_before);
}

// The cache has no destructor of its own (the spawn path reads it with no first-use guard): a
// thread's first slow path arms its close at exit. A thread that only ever frees blocks others
// allocated must be closed too, refunding what it was charged beyond its base.
TEST(BlockCache, AThreadThatOnlyFreesIsClosedAtItsExit) {
    SKIP_WITHOUT_CACHE();
    constexpr std::size_t bytes = 128;
    const std::size_t n = info::base_per_class() + 100;
    const std::size_t charged_before = info::wide_charged();
    auto blocks = take_blocks(n, bytes);
    std::size_t charged_inside = 0;
    std::thread([&] {
        give_blocks(blocks, bytes);
        charged_inside = info::wide_charged();
    }).join();
    EXPECT_GE(charged_inside - charged_before, 100 * info::block_size(bytes));
    EXPECT_EQ(info::wide_charged(), charged_before) << "the thread's exit did not close its cache";
}

TEST(BlockCache, AWorkerKeepsOnlyItsBase) {
    SKIP_WITHOUT_CACHE();
    constexpr std::size_t bytes = 128, n = 2000;
    const std::size_t charged_before = info::wide_charged();
    config c;
    c.workers = 1;
    runtime rt(c);
    // From a fresh plain thread, so that no block an earlier test left in this thread's cache
    // is taken (uncharged) by the spawn; that thread's own charges are refunded as it exits.
    std::size_t held = 0;
    std::thread([&] {
        held = rt.block_on([]() -> task<std::size_t> {
            auto blocks = take_blocks(n, bytes);
            give_blocks(blocks, bytes);
            co_return info::held(bytes);
        }());
    }).join();
    EXPECT_LE(held, info::base_per_class());
    EXPECT_EQ(info::wide_charged(), charged_before);
}

// Threads outside the runtime free more than the budget between them, concurrently (run under
// ThreadSanitizer too): what they keep beyond their bases never passes it, the rest goes back
// to the heap, and their exits refund every charge.
TEST(BlockCache, TheSharedBudgetBoundsWhatPlainThreadsKeepBeyondTheirBases) {
    SKIP_WITHOUT_CACHE();
    constexpr std::size_t bytes = 1000;  // the largest class: the budget is reached sooner
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

// What the homes did since `a` was read.
info::home_counts homes_since(const info::home_counts& a) {
    const info::home_counts b = info::homes();
    return {b.sent - a.sent, b.taken - a.taken, b.refused - a.refused};
}

// Counts what the homes did while `f` ran.
template <class F>
info::home_counts home_delta(F&& f) {
    const info::home_counts a = info::homes();
    f();
    return homes_since(a);
}

// A class no task of the suite uses, so the caches start empty of it on fresh threads.
constexpr std::size_t home_bytes = 900;
constexpr std::size_t home_blocks = 600;

// Frees `blocks` on the worker of a one-worker runtime, whose base keeps 256 of them; the rest
// have no room there. Returns what the homes did meanwhile: counted while the runtime still runs
// once `sent` blocks went home (the worker's park flushes its last batch; a bounded wait, the
// verdict is the caller's count), or, if `join_first`, once the runtime is dropped (the
// worker's exit flushes it).
info::home_counts free_on_a_worker(std::vector<void*>& blocks, bool join_first,
                                   std::uint64_t sent = 0) {
    const info::home_counts a = info::homes();
    config c;
    c.workers = 1;
    auto rt = std::make_unique<runtime>(c);
    rt->block_on([](std::vector<void*>& v) -> task<void> {
        give_blocks(v, home_bytes);
        co_return;
    }(blocks));
    if (join_first) {
        rt.reset();
    } else {
        for (int i = 0; i < 5000 && info::homes().sent - a.sent < sent; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return homes_since(a);
}

TEST(BlockHome, EveryBlockIsStampedWithTheHomeOfTheThreadThatAllocatedIt) {
    SKIP_WITHOUT_CACHE();
    std::thread([] {
        const std::uint16_t mine = info::my_home();
        ASSERT_NE(mine, 0u);
        auto blocks = take_blocks(10, home_bytes);
        for (void* p : blocks) EXPECT_EQ(info::home_of(p, home_bytes), mine);
        std::uint16_t other = 0;
        std::thread([&] {
            other = info::my_home();
            for (void* p : blocks) {  // a block taken from another thread's cache is restamped
                cached_free(p, home_bytes);
                EXPECT_EQ(info::home_of(cached_alloc(home_bytes), home_bytes), other);
            }
        }).join();
        EXPECT_NE(other, mine);
    }).join();
}

// The blocks a worker has no room for go back to the thread that allocated them, which takes
// them into its own cache at its next allocation: none reaches glibc's free on the worker.
TEST(BlockHome, WhatAWorkerHasNoRoomForGoesHomeAndIsTakenBack) {
    SKIP_WITHOUT_CACHE();
    std::thread([] {
        auto blocks = take_blocks(home_blocks, home_bytes);
        const std::size_t extra = home_blocks - info::base_per_class();
        const info::home_counts sent = free_on_a_worker(blocks, false, extra);
        EXPECT_EQ(sent.sent, extra)
            << "the worker's idle flush sends every block it has no room for";
        EXPECT_EQ(sent.refused, 0u);
        EXPECT_EQ(info::held(home_bytes), 0u);
        const info::home_counts taken =
            home_delta([&] { blocks.push_back(cached_alloc(home_bytes)); });
        EXPECT_EQ(taken.taken, extra);
        EXPECT_EQ(info::held(home_bytes), extra - 1) << "the home came back into this cache";
        give_blocks(blocks, home_bytes);
    }).join();
}

TEST(BlockHome, AWorkersExitSendsWhatItBatched) {
    SKIP_WITHOUT_CACHE();
    std::thread([] {
        auto blocks = take_blocks(home_blocks, home_bytes);
        const info::home_counts d = free_on_a_worker(blocks, true);
        EXPECT_EQ(d.sent, home_blocks - info::base_per_class());
    }).join();
}

// A home whose thread exited takes nothing more: blocks stamped with it go to the heap, counted.
TEST(BlockHome, BlocksOfAThreadThatExitedGoToTheHeap) {
    SKIP_WITHOUT_CACHE();
    std::vector<void*> blocks;
    std::thread([&] { blocks = take_blocks(home_blocks, home_bytes); }).join();
    const info::home_counts d = free_on_a_worker(blocks, true);
    EXPECT_EQ(d.sent, 0u);
    EXPECT_EQ(d.refused, home_blocks - info::base_per_class());
}

// Homes are handed back at thread exit: more threads than there are homes each get one.
TEST(BlockHome, AnExitedThreadsHomeIsReused) {
    SKIP_WITHOUT_CACHE();
    for (int i = 0; i < 2500; ++i) {
        std::uint16_t h = 0;
        std::thread([&] { h = info::my_home(); }).join();
        ASSERT_NE(h, 0u) << "thread " << i << " found no home";
    }
}

// What the tasks of the crossing test share.
struct crossing {
    std::mutex mu;
    std::set<void*> live;          // handed out and not yet freed
    std::vector<void*> in_flight;  // allocated by one task, to be freed by another
    std::atomic<int> doubles{0}, torn{0};
    std::atomic<int> producing{0};  // producers not yet done

    void hold(void* p) {
        std::lock_guard lk(mu);
        if (!live.insert(p).second) doubles.fetch_add(1);
    }
    void drop(void* p) {
        std::lock_guard lk(mu);
        live.erase(p);
    }
};

// Allocates blocks, tags each with its own address and hands them to the consumers.
task<void> produce_blocks(crossing& x) {
    for (int round = 0; round < 60; ++round) {
        std::vector<void*> mine;
        for (int i = 0; i < 64; ++i) {
            void* p = cached_alloc(home_bytes);
            x.hold(p);
            static_cast<std::uintptr_t*>(p)[1] = reinterpret_cast<std::uintptr_t>(p);
            mine.push_back(p);
        }
        {
            std::lock_guard lk(x.mu);
            x.in_flight.insert(x.in_flight.end(), mine.begin(), mine.end());
        }
        if (round % 4 == 0) co_await yield_now();
    }
    x.producing.fetch_sub(1);
}

// Frees what the producers handed over, checking each tag, until they are done and it is gone:
// a consumer's cache fills with the producers' blocks and the rest goes to their homes.
task<void> consume_blocks(crossing& x) {
    for (;;) {
        const bool last = x.producing.load() == 0;  // read before the list: nothing comes after
        std::vector<void*> theirs;
        {
            std::lock_guard lk(x.mu);
            const std::size_t n = std::min<std::size_t>(x.in_flight.size(), 64);
            theirs.assign(x.in_flight.end() - static_cast<std::ptrdiff_t>(n), x.in_flight.end());
            x.in_flight.resize(x.in_flight.size() - n);
        }
        for (void* p : theirs) {
            if (static_cast<std::uintptr_t*>(p)[1] != reinterpret_cast<std::uintptr_t>(p))
                x.torn.fetch_add(1);
            x.drop(p);
            cached_free(p, home_bytes);
        }
        if (theirs.empty() && last) co_return;
        co_await yield_now();
    }
}

task<void> cross_all(crossing& x) {
    std::vector<join_handle<void>> hs;
    x.producing.store(4);
    for (int t = 0; t < 4; ++t) {
        hs.push_back(spawn(produce_blocks(x)));
        hs.push_back(spawn(consume_blocks(x)));
    }
    for (auto& h : hs) co_await h;
}

// Four producers and four consumers on four workers pass blocks through a shared list while
// runtimes come and go (their workers' homes close and are claimed again): no block is handed out
// while another holder has it, and each keeps what its allocator wrote. Run under ThreadSanitizer
// too.
TEST(BlockHome, BlocksCrossingWorkersAndExitingThreadsAreNeverHandedOutTwice) {
    SKIP_WITHOUT_CACHE();
    crossing x;
    const info::home_counts d = home_delta([&] {
        for (int generation = 0; generation < 4; ++generation) {
            config c;
            c.workers = 4;
            runtime rt(c);
            rt.block_on(cross_all(x));
        }
    });
    EXPECT_GT(d.sent, 0u) << "no block went home: the test did not exercise the homes";
    // Every worker has exited: each block sent was taken back once, by an owner or its close.
    EXPECT_EQ(d.taken, d.sent);
    EXPECT_TRUE(x.in_flight.empty());
    EXPECT_EQ(x.doubles.load(), 0) << "a block was handed out while held";
    EXPECT_EQ(x.torn.load(), 0);
    EXPECT_TRUE(x.live.empty());
    std::printf("[ homes    ] sent %llu, taken %llu, refused %llu\n",
                static_cast<unsigned long long>(d.sent), static_cast<unsigned long long>(d.taken),
                static_cast<unsigned long long>(d.refused));
}

}  // namespace
}  // namespace blitz::detail
