// SPDX-License-Identifier: MIT
// Randomized stress of the local ring: one owner pushing (with overflow into the global queue)
// and popping, several thieves stealing and re-stealing from each other. Every task must come
// out exactly once (Q6) and no ring may ever report more than its capacity (Q1).

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz_testing/queue_race.hpp"
#include "blitz_testing/test_support.hpp"
#include "sched/global_queue.hpp"
#include "sched/local_queue.hpp"
#include "stress_scale.hpp"

namespace blitz::detail {
namespace {

void run_conservation(std::uint32_t start_index, int thieves, std::uint64_t seed) {
    const std::size_t total = 300'000 * stress::scale();
    testing::header_pool pool(total);
    global_queue g;
    std::vector<std::unique_ptr<local_queue>> rings;
    for (int k = 0; k <= thieves; ++k) {
        rings.push_back(std::make_unique<local_queue>(start_index + 977u * k));
    }
    std::vector<std::atomic<std::uint8_t>> seen(total);
    std::atomic<std::size_t> taken{0};
    std::atomic<bool> producing{true};
    std::atomic<std::uint32_t> max_len{0};
    auto record = [&](task_header* t) {
        seen[pool.index_of(t)].fetch_add(1, std::memory_order_relaxed);
        taken.fetch_add(1, std::memory_order_relaxed);
    };
    auto note_len = [&](std::uint32_t l) {
        std::uint32_t m = max_len.load(std::memory_order_relaxed);
        while (l > m && !max_len.compare_exchange_weak(m, l)) {
        }
    };
    std::vector<std::thread> ts;
    for (int k = 1; k <= thieves; ++k) {
        ts.emplace_back([&, k] {
            fast_rng rng(mix_seed(seed + k));
            local_queue& mine = *rings[k];
            while (producing.load(std::memory_order_acquire) || taken.load() < total) {
                // Steal from a random ring (the owner's or another thief's), then run some.
                unsigned v = rng.bounded(thieves + 1);
                if (v != unsigned(k)) {
                    auto r = rings[v]->steal_into(mine, 1 + rng.bounded(128));
                    if (r.first) record(r.first);
                    note_len(mine.len());
                }
                for (unsigned n = rng.bounded(64); n > 0; --n) {
                    if (task_header* t = mine.pop())
                        record(t);
                    else
                        break;
                }
                if (task_header* t = g.pop()) record(t);
                if (!producing.load() && taken.load() >= total) break;
            }
        });
    }
    fast_rng rng(mix_seed(seed));
    local_queue& owner = *rings[0];
    for (std::size_t pushed = 0; pushed < total;) {
        for (unsigned burst = 1 + rng.bounded(400); burst > 0 && pushed < total; --burst) {
            owner.push(pool.at(pushed++), g);
            note_len(owner.len());
        }
        for (unsigned pops = rng.bounded(300); pops > 0; --pops) {
            if (task_header* t = owner.pop())
                record(t);
            else
                break;
        }
    }
    producing.store(false, std::memory_order_release);
    while (taken.load() < total) {
        if (task_header* t = owner.pop())
            record(t);
        else if (task_header* t = g.pop())
            record(t);
        else
            std::this_thread::yield();
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(taken.load(), total);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < total; ++i) bad += seen[i].load() != 1;
    EXPECT_EQ(bad, 0u) << "seed " << seed << ": tasks lost or duplicated";
    EXPECT_LE(max_len.load(), local_queue::capacity);
}

TEST(QueueStress, ConservationWithRestealingThieves) { run_conservation(0, 3, 1); }
TEST(QueueStress, ConservationAcrossTheIndexWrap) { run_conservation(0xFFFFFFFFu - 5000, 3, 2); }
TEST(QueueStress, ConservationWithManyThieves) { run_conservation(12345, 7, 3); }

// G1 (amended by issue 21): lock-free producers racing consumers on the global queue, several
// rounds: every task once, each producer's in its order (TSan checks the links' publication).
TEST(QueueStress, GlobalQueueProducersRacingConsumers) {
    for (int round = 0; round < 4; ++round) {
        const auto r = testing::global_queue_race(3 + round % 3, 1 + round % 2, 30'000);
        EXPECT_TRUE(r.first.empty()) << r.first;
        EXPECT_EQ(r.lost + r.duplicates + r.out_of_order, 0u);
    }
}

}  // namespace
}  // namespace blitz::detail
