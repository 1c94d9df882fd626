// SPDX-License-Identifier: MIT
// The task block cache and its depot (task/block_cache): blocks freed on one thread come back to
// the thread that allocates, the bounds hold, and no block is handed to two owners at once.

#include "task/block_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace blitz::detail::blocks {
namespace {

constexpr std::size_t kClass = class_of(144);  // an empty task's block
constexpr std::size_t kMagazine = magazine_of(kClass);

// Runs f on a fresh thread (its cache starts empty) and returns what it returns.
template <class F>
auto on_fresh_thread(F f) {
    decltype(f()) r{};
    std::thread([&] { r = f(); }).join();
    return r;
}

std::vector<void*> take_n(std::size_t n) {
    std::vector<void*> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(take(kClass));
    return v;
}

// Thread A takes n blocks, thread B frees them all, then A (still alive, its cache empty) takes
// n again: returns the heap allocations of A's second round.
std::uint64_t second_round_heap_takes(std::size_t n) {
    std::vector<void*> blocks;
    std::uint64_t heap = 0;
    std::mutex mu;
    std::condition_variable cv;
    int phase = 0;  // 0: A takes; 1: B frees; 2: A takes again
    std::thread a([&] {
        blocks = take_n(n);
        {
            std::unique_lock l(mu);
            phase = 1;
            cv.notify_all();
            cv.wait(l, [&] { return phase == 2; });
        }
        const std::uint64_t before = heap_takes_this_thread();
        std::vector<void*> again = take_n(n);
        heap = heap_takes_this_thread() - before;
        for (void* p : again) give(p, kClass);
    });
    std::thread b([&] {
        {
            std::unique_lock l(mu);
            cv.wait(l, [&] { return phase == 1; });
        }
        for (void* p : blocks) give(p, kClass);
        std::lock_guard l(mu);
        phase = 2;
        cv.notify_all();
    });
    b.join();
    a.join();
    return heap;
}

TEST(BlockCache, BlocksFreedOnAnotherThreadComeBackThroughTheDepot) {
    if (!cache_on) GTEST_SKIP() << "the block cache is off under AddressSanitizer";
    // The freeing thread keeps two magazines and hands the rest to the depot, where the
    // allocating thread takes them back: at most two magazines' worth (plus a partial one) come
    // from the heap, where before the depot all 4,096 did.
    constexpr std::size_t n = 4096;
    const std::uint64_t heap = second_round_heap_takes(n);
    EXPECT_LE(heap, 3 * kMagazine) << "of " << n;
    drain_depot();
}

TEST(BlockCache, ControlWithoutTheDepotEveryBlockComesFromTheHeap) {
    if (!cache_on) GTEST_SKIP() << "the block cache is off under AddressSanitizer";
    // The previous test's bound fails without the depot: the allocating thread's cache stays
    // empty, so its second round is all heap.
    drain_depot();
    set_depot_enabled(false);
    constexpr std::size_t n = 4096;
    const std::uint64_t heap = second_round_heap_takes(n);
    set_depot_enabled(true);
    EXPECT_EQ(heap, n);
    EXPECT_GT(heap, 3 * kMagazine);  // the bound the test above holds
}

TEST(BlockCache, AThreadReusesItsOwnBlocksWithoutTheHeap) {
    if (!cache_on) GTEST_SKIP() << "the block cache is off under AddressSanitizer";
    const std::uint64_t heap = on_fresh_thread([] {
        for (void* p : take_n(2 * kMagazine)) give(p, kClass);
        const std::uint64_t before = heap_takes_this_thread();
        for (void* p : take_n(2 * kMagazine)) give(p, kClass);
        return heap_takes_this_thread() - before;
    });
    EXPECT_EQ(heap, 0u);
}

TEST(BlockCache, TheDepotHoldsNoMoreThanItsBound) {
    if (!cache_on) GTEST_SKIP() << "the block cache is off under AddressSanitizer";
    drain_depot();
    // Twice the depot's bound, freed by a thread nobody takes from.
    const std::size_t n = 2 * depot_bytes / bytes_of(kClass);
    std::vector<void*> blocks = on_fresh_thread([&] { return take_n(n); });
    std::size_t magazines = 0;
    std::thread([&] {
        for (void* p : blocks) give(p, kClass);
        magazines = depot_magazines(kClass);
    }).join();
    EXPECT_LE(depot_held_bytes(), depot_bytes);
    EXPECT_EQ(magazines * kMagazine * bytes_of(kClass), depot_held_bytes());
    EXPECT_GT(magazines, 0u);
    drain_depot();
    EXPECT_EQ(depot_held_bytes(), 0u);
    EXPECT_EQ(depot_magazines(kClass), 0u);
}

// Producers take blocks, stamp them with their own id and hand them to consumers through a
// locked queue; consumers check the stamp, and every block is checked against the set of blocks
// in use (a block handed to two owners at once shows there). Under ThreadSanitizer this is the
// depot's stress test: blocks cross threads both ways, through the depot's locks.
TEST(BlockCache, StressBlocksCrossThreadsAndNoneHasTwoOwners) {
    if (!cache_on) GTEST_SKIP() << "the block cache is off under AddressSanitizer";
    constexpr int producers = 2, consumers = 2, per_producer = 20'000;
    std::mutex mu;
    std::deque<void*> q;
    std::set<void*> live;
    bool twice = false;             // under mu
    std::atomic<bool> torn{false};  // set by either consumer
    int done_producers = 0;
    auto produce = [&](int id) {
        for (int i = 0; i < per_producer; ++i) {
            void* p = take(kClass);
            std::memset(p, id, bytes_of(kClass));
            std::lock_guard l(mu);
            twice |= !live.insert(p).second;
            q.push_back(p);
        }
        std::lock_guard l(mu);
        ++done_producers;
    };
    auto consume = [&] {
        for (;;) {
            void* p = nullptr;
            {
                std::lock_guard l(mu);
                if (q.empty()) {
                    if (done_producers == producers) return;
                } else {
                    p = q.front();
                    q.pop_front();
                    live.erase(p);
                }
            }
            if (!p) {
                std::this_thread::yield();
                continue;
            }
            auto* b = static_cast<unsigned char*>(p);
            bool mixed = false;
            for (std::size_t k = 0; k < bytes_of(kClass); ++k) mixed |= b[k] != b[0];
            if (mixed) torn = true;
            give(p, kClass);
            // A consumer also allocates, so blocks flow back through the depot both ways.
            if ((reinterpret_cast<std::uintptr_t>(p) >> 4) % 3 == 0) give(take(kClass), kClass);
        }
    };
    std::vector<std::thread> ts;
    for (int i = 0; i < producers; ++i) ts.emplace_back(produce, i + 1);
    for (int i = 0; i < consumers; ++i) ts.emplace_back(consume);
    for (auto& t : ts) t.join();
    EXPECT_FALSE(twice) << "a block was handed out while in use";
    EXPECT_FALSE(torn) << "a block was written by two owners";
    EXPECT_TRUE(live.empty());
    drain_depot();
}

}  // namespace
}  // namespace blitz::detail::blocks
