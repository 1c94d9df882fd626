// SPDX-License-Identifier: MIT
// join_set and join_map under contention (issue 47, X8): tasks finishing on every worker while
// their owners join through selects against short sleeps, abort at random, drop sets with tasks
// still running, and detach others. Every outcome comes out once or is dropped by the set's own
// drop; nothing hangs; no entry or frame is left (the counts say so, never a clock). Run under
// TSan by make test.

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/workloads.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

struct counts {
    std::atomic<long> alive{0};     // set tasks whose frames live
    std::atomic<long> finished{0};  // set tasks that reached co_return
    std::atomic<long> out{0};       // outcomes that came out of join_next as values
};

task<int> member(counts& c, std::uint32_t seed) {
    workloads::frame_count<long> counted(c.alive);
    detail::fast_rng rng(seed);
    for (unsigned k = rng.bounded(4); k > 0; --k) co_await yield_now();
    if (rng.bounded(8) == 0) co_await sleep(std::chrono::microseconds(rng.bounded(300)));
    c.finished.fetch_add(1);
    co_return 1;
}

task<void> owner(counts& c, std::uint32_t seed, int n) {
    detail::fast_rng rng(seed);
    join_set<int> set;
    for (int i = 0; i < n; ++i) {
        set.spawn(member(c, rng.next()));
        if (rng.bounded(64) == 0) set.abort_all();
        if (rng.bounded(4) == 0) {
            auto r = co_await select(set.join_next(), sleep(std::chrono::microseconds(20)));
            if (r.index() == 0 && std::get<0>(r) && std::get<0>(r)->has_value()) c.out.fetch_add(1);
        }
    }
    switch (rng.bounded(3)) {
        case 0:  // drop with tasks still in it
            break;
        case 1:
            co_await set.shutdown();
            break;
        default:
            while (auto r = co_await set.join_next()) {
                if (r->has_value()) c.out.fetch_add(1);
            }
    }
}

TEST(JoinSetStress, OwnersOnEveryWorkerJoinAbortAndDropWithoutLosingTrack) {
    counts c;
    {
        config cfg;
        cfg.workers = 4;
        runtime rt(cfg);
        detail::fast_rng rng(7);
        const int owners = static_cast<int>(64 * stress::scale()) + 1;
        std::vector<join_handle<void>> hs;
        for (int o = 0; o < owners; ++o) hs.push_back(rt.spawn(owner(c, rng.next(), 500)));
        for (auto& h : hs) h.join();
        // Aborted and dropped sets' tasks finish as cancelled; the runtime's shutdown drains
        // whatever is still queued.
    }
    EXPECT_EQ(c.alive.load(), 0);
    EXPECT_LE(c.out.load(), c.finished.load());  // an outcome never comes out twice
    EXPECT_GT(c.out.load(), 0);
}

TEST(JoinSetStress, MapOwnersReplaceAndAbortKeysWhileTasksFinish) {
    counts c;
    std::atomic<long> off{0};
    {
        config cfg;
        cfg.workers = 4;
        runtime rt(cfg);
        const int rounds = static_cast<int>(20 * stress::scale()) + 1;
        for (int r = 0; r < rounds; ++r) {
            rt.block_on([](counts& c, std::atomic<long>& off, std::uint32_t seed) -> task<void> {
                detail::fast_rng rng(seed);
                join_map<int, int> map;
                // Per key: tasks whose outcome must come out (spawned and not replaced), and
                // outcomes that did.
                std::vector<int> owed(32, 0), seen(32, 0);
                for (int i = 0; i < 400; ++i) {
                    const int key = static_cast<int>(rng.bounded(32));
                    if (!map.contains(key)) ++owed[static_cast<std::size_t>(key)];
                    map.spawn(key, member(c, rng.next()));  // replaces (aborts) a running one
                    if (rng.bounded(16) == 0) (void)map.abort(static_cast<int>(rng.bounded(32)));
                    if (rng.bounded(3) == 0) {
                        if (auto o = map.try_join_next())
                            ++seen[static_cast<std::size_t>(o->first)];
                    }
                }
                while (auto o = co_await map.join_next())
                    ++seen[static_cast<std::size_t>(o->first)];
                for (std::size_t k = 0; k < owed.size(); ++k) off += owed[k] != seen[k] ? 1 : 0;
                EXPECT_TRUE(map.empty());
            }(c, off, static_cast<std::uint32_t>(r) * 2654435761u + 1));
        }
    }
    EXPECT_EQ(off.load(), 0);  // every key's outcomes came out exactly as owed
    EXPECT_EQ(c.alive.load(), 0);
}

}  // namespace
}  // namespace blitz
