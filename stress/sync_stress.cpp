// SPDX-License-Identifier: MIT
// Sync primitives under stress on all workers (X2-X4), also run under ThreadSanitizer: the mutex
// counter equals the increments, semaphore permits are conserved through random aborts of
// waiting and granted acquirers, notify loses no wakeup, barriers elect one leader per
// generation.

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/scenarios.hpp"
#include "blitz_testing/suite.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

class SyncByWorkers : public ::testing::TestWithParam<unsigned> {};

TEST_P(SyncByWorkers, MutexCounterEqualsIncrements) {
    runtime rt(conformance::fresh(GetParam()));
    mutex m;
    long counter = 0;
    const int per_task = static_cast<int>(200 * stress::scale());
    std::vector<join_handle<void>> hs;
    for (int t = 0; t < 32; ++t) {
        hs.push_back(rt.spawn([](mutex& m, long& c, int n, int t) -> task<void> {
            for (int i = 0; i < n; ++i) {
                auto g = co_await m.lock();
                const long v = c;
                if ((i + t) % 5 == 0) co_await yield_now();
                c = v + 1;
            }
        }(m, counter, per_task, t)));
    }
    for (auto& h : hs) h.join();
    EXPECT_EQ(counter, 32L * per_task);
}

TEST_P(SyncByWorkers, SemaphorePermitsAreConservedThroughAborts) {
    runtime rt(conformance::fresh(GetParam()));
    constexpr std::size_t total = 5;
    semaphore s(total);
    std::atomic<long> in_use{0}, peak{0};
    detail::fast_rng rng(detail::mix_seed(GetParam()));
    const int rounds = static_cast<int>(40 * stress::scale());
    for (int r = 0; r < rounds; ++r) {
        workloads::semaphore_churn_round(rt, s, total, rng, in_use, peak);
        ASSERT_EQ(s.available(), total) << "round " << r;  // every permit came back
        ASSERT_EQ(s.waiters(), 0u);
    }
    EXPECT_LE(peak.load(), static_cast<long>(total));
    EXPECT_GT(peak.load(), 0);
}

TEST_P(SyncByWorkers, NotifyLosesNoWakeup) {
    runtime rt(conformance::fresh(GetParam()));
    notify ping, pong;
    const int rounds = static_cast<int>(2000 * stress::scale());
    auto a = rt.spawn([](notify& ping, notify& pong, int n) -> task<void> {
        for (int i = 0; i < n; ++i) {
            ping.notify_one();
            co_await pong.notified();
        }
    }(ping, pong, rounds));
    auto b = rt.spawn([](notify& ping, notify& pong, int n) -> task<void> {
        for (int i = 0; i < n; ++i) {
            co_await ping.notified();
            pong.notify_one();
        }
    }(ping, pong, rounds));
    a.join();
    b.join();
    EXPECT_EQ(ping.stored_permits() + pong.stored_permits(), 0u);
}

TEST_P(SyncByWorkers, BarrierElectsOneLeaderPerGeneration) {
    runtime rt(conformance::fresh(GetParam()));
    constexpr int parties = 6;
    barrier b(parties);
    const int generations = static_cast<int>(100 * stress::scale());
    std::atomic<int> leaders{0};
    std::vector<join_handle<void>> hs;
    for (int t = 0; t < parties; ++t) {
        hs.push_back(rt.spawn([](barrier& b, int gens, std::atomic<int>& l) -> task<void> {
            for (int g = 0; g < gens; ++g) {
                auto r = co_await b.wait();
                if (r.is_leader()) l.fetch_add(1);
            }
        }(b, generations, leaders)));
    }
    for (auto& h : hs) h.join();
    EXPECT_EQ(leaders.load(), generations);
    EXPECT_EQ(b.generation(), static_cast<std::size_t>(generations));
}

INSTANTIATE_TEST_SUITE_P(Workers, SyncByWorkers, ::testing::Values(1u, 2u, 4u, 8u));

}  // namespace
}  // namespace blitz

namespace blitz {
namespace {

// A task that passes through every kind of await point in turn. Aborting it after k polls, for
// every k, must leave every primitive as it was and free every task (nothing leaks). The tours
// must not depend on one another to make progress: the channel holds a value per tour (a tour
// aborted between its send and its receive leaves one behind, legitimately), and each tour
// has its own notify (two notify_one calls with nobody waiting store one permit, so a shared
// one could leave a tour waiting for good).
struct prims {
    mutex m;
    semaphore sem{3};
    rwlock rw;
    notify nt[3];
    std::pair<sender<int>, receiver<int>> ch = channel<int>(3);
};

task<void> tour(prims& p, int id, int rounds) {
    for (int r = 0; r < rounds; ++r) {
        {
            auto g = co_await p.m.lock();
            co_await yield_now();
        }
        {
            auto permit = co_await p.sem.acquire(2);
            co_await yield_now();
        }
        {
            auto w = co_await p.rw.write();
            co_await yield_now();
        }
        (void)co_await p.ch.first.send(r);
        (void)co_await p.ch.second.recv();
        p.nt[id].notify_one();
        co_await p.nt[id].notified();
        (void)co_await spawn_blocking([] { return 1; });
        co_await sleep(std::chrono::microseconds(100));
    }
}

TEST(SyncCancel, AbortAtEveryAwaitPointLeaksNothing) {
    runtime rt(conformance::fresh(2));
    prims p;
    const std::uint64_t alive_before = rt.metrics().tasks_alive;
    for (int k = 0; k < static_cast<int>(60 * stress::scale()); ++k) {
        // Three tours contend; one is aborted after k yields of the driver.
        std::vector<join_handle<void>> hs;
        for (int t = 0; t < 3; ++t) hs.push_back(rt.spawn(tour(p, t, 3)));
        rt.block_on([](int k) -> task<void> {
            for (int i = 0; i < k % 20; ++i) co_await yield_now();
        }(k));
        hs[static_cast<std::size_t>(k) % 3].abort();
        for (auto& h : hs) {
            try {
                h.join();
            } catch (const task_cancelled&) {
            }
        }
        ASSERT_FALSE(p.m.is_locked()) << "k=" << k;
        ASSERT_EQ(p.sem.available(), 3u) << "k=" << k;
        ASSERT_TRUE(p.rw.try_write().has_value()) << "k=" << k;
        // At most the aborted tour's value is left in the channel; take it out for the next round.
        int left = 0;
        while (p.ch.second.try_recv()) ++left;
        ASSERT_LE(left, 1) << "k=" << k;
        for (auto& n : p.nt) {
            // A permit an aborted tour stored and never took is fine; clear it for the next round.
            n.notify_one();
            rt.block_on([](notify& n) -> task<void> { co_await n.notified(); }(n));
        }
    }
    // Every task frame is gone once the runtime has shut down.
    rt.shutdown();
    EXPECT_EQ(rt.metrics().tasks_alive, alive_before);
}

TEST(SyncCancel, SelectDeliversTheWinnerUnderLoad) {
    runtime rt(conformance::fresh(4));
    std::atomic<long> wrong{0};
    std::vector<join_handle<void>> hs;
    for (int t = 0; t < 16; ++t) {
        hs.push_back(rt.spawn([](int t, std::atomic<long>& wrong) -> task<void> {
            for (int i = 0; i < 50; ++i) {
                auto [tx, rx] = oneshot<int>();
                auto fast = [](int v) -> task<int> { co_return v; };
                auto slow = [](oneshot_receiver<int> rx) -> task<int> {
                    auto v = co_await rx;  // never sent: waits until aborted
                    co_return v ? *v : -1;
                };
                auto r = co_await select(slow(std::move(rx)), fast(t * 1000 + i));
                if (r.index() != 1 || std::get<1>(r) != t * 1000 + i) wrong.fetch_add(1);
            }
        }(t, wrong)));
    }
    for (auto& h : hs) h.join();
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace blitz
