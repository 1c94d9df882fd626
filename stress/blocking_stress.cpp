// SPDX-License-Identifier: MIT
// The blocking pool under stress (X1), also under ThreadSanitizer: jobs from many tasks on all
// workers with small caps and a 1 ms keep-alive (threads retire and return constantly), and
// shutdowns that race with submission. Every job is run or cancelled exactly once, the cap
// holds, nothing hangs.

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

task<long> submit_many(int n, std::atomic<long>& ran, std::atomic<int>& running, unsigned cap,
                       std::atomic<bool>& over_cap) {
    std::vector<blocking_handle<long>> hs;
    for (int i = 0; i < n; ++i) {
        hs.push_back(spawn_blocking([i, &ran, &running, cap, &over_cap]() -> long {
            if (static_cast<unsigned>(running.fetch_add(1) + 1) > cap) over_cap = true;
            ran.fetch_add(1);
            running.fetch_sub(1);
            return i;
        }));
    }
    long sum = 0;
    for (auto& h : hs) {
        try {
            sum += co_await h;
        } catch (const task_cancelled&) {
        }
    }
    co_return sum;
}

TEST(BlockingStress, JobsRunOnceUnderTheCapWhileThreadsComeAndGo) {
    detail::fast_rng rng(7);
    for (unsigned long round = 0; round < 20 * stress::scale(); ++round) {
        config c;
        c.workers = 1 + rng.bounded(4);
        c.blocking_threads_max = 1 + rng.bounded(6);
        c.blocking_keep_alive = 1ms;
        runtime rt(c);
        std::atomic<long> ran{0};
        std::atomic<int> running{0};
        std::atomic<bool> over_cap{false};
        std::vector<join_handle<long>> hs;
        for (int t = 0; t < 8; ++t) {
            hs.push_back(rt.spawn(submit_many(25, ran, running, c.blocking_threads_max, over_cap)));
        }
        for (auto& h : hs) EXPECT_EQ(h.join(), 25L * 24 / 2);
        EXPECT_EQ(ran.load(), 8 * 25);
        EXPECT_FALSE(over_cap.load());
        EXPECT_LE(rt.metrics().blocking_peak_threads, c.blocking_threads_max);
    }
}

TEST(BlockingStress, ShutdownRacingSubmissionLosesNothing) {
    for (unsigned long round = 0; round < 20 * stress::scale(); ++round) {
        config c;
        c.workers = 2;
        c.blocking_threads_max = 2;
        auto rt = std::make_unique<runtime>(c);
        std::atomic<long> ran{0};
        std::vector<blocking_handle<int>> hs;
        for (int i = 0; i < 200; ++i) {
            hs.push_back(rt->spawn_blocking([&ran] {
                ran.fetch_add(1);
                return 1;
            }));
            if (i == 100) rt->shutdown();  // the rest are cancelled at submission
        }
        long ok = 0, cancelled = 0;
        for (auto& h : hs) {
            try {
                ok += h.join();
            } catch (const task_cancelled&) {
                ++cancelled;
            }
        }
        EXPECT_EQ(ok, ran.load());       // a job reported as run did run, once
        EXPECT_EQ(ok + cancelled, 200);  // and every job is one or the other
        EXPECT_GE(cancelled, 99);        // everything submitted after shutdown
    }
}

}  // namespace
}  // namespace blitz
