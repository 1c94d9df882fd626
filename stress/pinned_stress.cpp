// SPDX-License-Identifier: MIT
// Pinned tasks under contention (issue 47, P1): pinned tasks on every worker woken at random by
// tasks on other workers, by plain threads and by timers, some aborted from other threads,
// others spawned from plain threads while their homes park, the runtime shut down with pinned
// tasks still queued in inboxes. No pinned poll away from home, every wake delivered (each
// member counts its values), no frame left (the counts say so, never a clock). Run under TSan
// by make test: the inbox's push and take race here as they do in a service.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/workloads.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace pinned_stress {
namespace {

using namespace std::chrono_literals;

struct counts {
    std::atomic<long> alive{0};  // pinned frames alive
    std::atomic<long> away{0};   // pinned polls off their home
    std::atomic<long> got{0};    // values the members received
};

// Receives until the channel closes, checking its worker after each wake.
task<void> member(counts& c, int home, receiver<int> rx, std::uint32_t seed) {
    workloads::frame_count<long> counted(c.alive);
    detail::fast_rng rng(seed);
    while (auto v = co_await rx.recv()) {
        if (this_worker_index() != home) c.away.fetch_add(1);
        c.got.fetch_add(1);
        if (rng.bounded(4) == 0) co_await sleep(std::chrono::microseconds(rng.bounded(100)));
        if (this_worker_index() != home) c.away.fetch_add(1);
    }
}

task<void> sender_task(sender<int> tx, int n) {
    for (int i = 0; i < n; ++i) {
        if (!co_await tx.send(i)) co_return;
    }
}

TEST(PinnedTaskStress, WakesFromEverywhereAlwaysComeHome) {
    counts c;
    long sent = 0;
    {
        config cfg;
        cfg.workers = 4;
        runtime rt(cfg);
        detail::fast_rng rng(11);
        const int rounds = static_cast<int>(8 * stress::scale());
        for (int r = 0; r < rounds; ++r) {
            std::vector<join_handle<void>> members, senders;
            std::vector<sender<int>> plain;
            for (int m = 0; m < 16; ++m) {
                const unsigned home = rng.bounded(4);
                auto [tx, rx] = channel<int>(2);
                members.push_back(
                    rt.spawn_pinned(home, member(c, static_cast<int>(home), rx, rng.next())));
                senders.push_back(rt.spawn(sender_task(tx, 50)));
                sent += 50;
                plain.push_back(tx);
            }
            // A plain thread's values beside the tasks'.
            std::thread feeder([&plain] {
                for (int i = 0; i < 50; ++i) {
                    for (auto& tx : plain) {
                        while (tx.try_send(i).full()) std::this_thread::yield();
                    }
                }
            });
            feeder.join();
            sent += 50L * 16;
            plain.clear();
            for (auto& s : senders) s.join();
            for (auto& m : members) m.join();
        }
        // Pinned tasks left waiting and queued as the runtime shuts down.
        std::vector<sender<int>> keep;
        for (int m = 0; m < 32; ++m) {
            auto [tx, rx] = channel<int>(1);
            (void)rt.spawn_pinned(static_cast<unsigned>(m % 4), member(c, m % 4, rx, 1));
            keep.push_back(tx);
        }
    }
    EXPECT_EQ(c.away.load(), 0);
    EXPECT_EQ(c.got.load(), sent);
    EXPECT_EQ(c.alive.load(), 0);
}

task<void> sleeper(counts& c) {
    workloads::frame_count<long> counted(c.alive);
    co_await sleep(1h);
}

TEST(PinnedTaskStress, AbortsAndRemoteSpawnsRaceTheHomesPark) {
    counts c;
    {
        config cfg;
        cfg.workers = 2;
        runtime rt(cfg);
        const int rounds = static_cast<int>(200 * stress::scale());
        for (int r = 0; r < rounds; ++r) {
            auto h = rt.spawn_pinned(static_cast<unsigned>(r % 2), sleeper(c));
            if (r % 3 == 0) std::this_thread::yield();
            h.abort();  // from this thread, while the home parks or runs
            EXPECT_THROW(h.join(), task_cancelled);
        }
    }
    EXPECT_EQ(c.alive.load(), 0);
}

}  // namespace
}  // namespace pinned_stress
}  // namespace blitz
