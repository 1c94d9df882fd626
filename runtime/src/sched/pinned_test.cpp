// SPDX-License-Identifier: MIT
// Pinned tasks (issue 47, item 3; INVARIANTS P1): blitz::spawn_local, runtime::spawn_pinned and
// local_set. A pinned task is polled on its home worker only, whoever wakes it (a task on
// another worker, a plain thread, a timer, an abort), however busy the other workers are.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/suite.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

// Records, after each of its awaits, whether it still runs on `home`.
task<int> stays_put(int home, int yields, std::atomic<int>& moved) {
    if (this_worker_index() != home) moved.fetch_add(1);
    for (int i = 0; i < yields; ++i) {
        co_await yield_now();
        if (this_worker_index() != home) moved.fetch_add(1);
    }
    co_return this_worker_index();
}

// Yields `n` times: load that keeps every worker's ring busy, so thieves look for work.
task<void> churn(int n) {
    for (int i = 0; i < n; ++i) co_await yield_now();
}

task<int> pinned_under_load(int pinned, int yields, std::atomic<int>& moved) {
    const int home = this_worker_index();
    std::vector<join_handle<void>> load;
    for (int i = 0; i < 64; ++i) load.push_back(spawn(churn(200)));
    std::vector<join_handle<int>> hs;
    for (int i = 0; i < pinned; ++i) hs.push_back(spawn_local(stays_put(home, yields, moved)));
    int on_home = 0;
    for (auto& h : hs) on_home += (co_await h) == home ? 1 : 0;
    for (auto& h : load) co_await h;
    co_return on_home;
}

TEST(Pinned, SpawnLocalTasksNeverLeaveTheirWorker) {
    for (unsigned workers : {2u, 4u}) {
        runtime rt(conformance::fresh(workers));
        std::atomic<int> moved{0};
        EXPECT_EQ(rt.block_on(pinned_under_load(100, 50, moved)), 100);
        EXPECT_EQ(moved.load(), 0) << workers << " workers";
        std::uint64_t pinned_polls = 0;
        for (const auto& w : rt.metrics().workers) pinned_polls += w.pinned_polls;
        EXPECT_GE(pinned_polls, 100u * 51u);
    }
}

// Waits for a value on `rx`, then checks where it runs.
task<int> wait_then_check(int home, receiver<int> rx, std::atomic<int>& moved) {
    int sum = 0;
    while (auto v = co_await rx.recv()) {
        sum += *v;
        if (this_worker_index() != home) moved.fetch_add(1);
    }
    co_return sum;
}

task<void> send_all(sender<int> tx, int n) {
    for (int i = 0; i < n; ++i) (void)co_await tx.send(1);
}

TEST(Pinned, WakesFromOtherWorkersAndPlainThreadsComeHome) {
    runtime rt(conformance::fresh(4));
    std::atomic<int> moved{0};
    for (unsigned home = 0; home < 4; ++home) {
        // Woken by tasks on any worker.
        auto [tx, rx] = channel<int>(1);
        auto h = rt.spawn_pinned(home, wait_then_check(static_cast<int>(home), rx, moved));
        std::vector<join_handle<void>> senders;
        for (int i = 0; i < 4; ++i) senders.push_back(rt.spawn(send_all(tx, 25)));
        for (auto& s : senders) s.join();
        // Woken by a plain thread.
        for (int i = 0; i < 25;) {
            if (tx.try_send(1)) {
                ++i;
            } else {
                std::this_thread::yield();
            }
        }
        {
            auto last = std::move(tx);
        }  // closes the channel
        EXPECT_EQ(h.join(), 125);
    }
    EXPECT_EQ(moved.load(), 0);
    std::uint64_t remote = 0;
    for (const auto& w : rt.metrics().workers) remote += w.pinned_remote;
    EXPECT_GE(remote, 4u);  // at least each spawn_pinned from this thread
}

task<int> sleeps_then_reports(int home, std::atomic<int>& moved) {
    for (int i = 0; i < 20; ++i) {
        co_await sleep(1ms);  // fired by whichever worker turns the timers
        if (this_worker_index() != home) moved.fetch_add(1);
    }
    co_return this_worker_index();
}

TEST(Pinned, TimersWakeAPinnedTaskOnItsHome) {
    runtime rt(conformance::fresh(4));
    std::atomic<int> moved{0};
    std::vector<join_handle<int>> hs;
    for (unsigned i = 0; i < 8; ++i) {
        hs.push_back(rt.spawn_pinned(i % 4, sleeps_then_reports(static_cast<int>(i % 4), moved)));
    }
    for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(hs[i].join(), static_cast<int>(i % 4));
    EXPECT_EQ(moved.load(), 0);
}

TEST(Pinned, AParkedHomeIsWokenForItsTask) {
    // A park timeout of an hour: without the targeted unpark the spawn would wait for it (the
    // test would hang), since a remote pinned spawn claims no worker.
    config c = conformance::fresh(2);
    c.park_timeout = std::chrono::hours(1);
    runtime rt(c);
    std::atomic<int> moved{0};
    for (int round = 0; round < 50; ++round) {
        std::this_thread::sleep_for(200us);  // let both workers park
        EXPECT_EQ(rt.spawn_pinned(1, stays_put(1, 1, moved)).join(), 1);
        EXPECT_EQ(rt.spawn_pinned(0, stays_put(0, 1, moved)).join(), 0);
    }
    EXPECT_EQ(moved.load(), 0);
}

// A pinned task and a ring task on one worker, both yielding: they take turns.
task<void> counting_yielder(int& count, int n) {
    for (int i = 0; i < n; ++i) {
        ++count;
        co_await yield_now();
    }
}

task<int> turns_on_one_worker() {
    int ring_steps = 0, pinned_steps = 0;
    auto pinned = spawn_local(counting_yielder(pinned_steps, 1000));
    auto ring = spawn(counting_yielder(ring_steps, 1'000'000));
    co_await pinned;
    const int seen = ring_steps;  // how far the ring task got while the pinned one ran
    ring.abort();
    co_await yield_now();
    co_return seen;
}

TEST(Pinned, PinnedTasksTakeTurnsWithTheRing) {
    runtime rt(conformance::fresh(1));
    // Alternating picks: about one ring poll per pinned poll (counted, not timed).
    EXPECT_GE(rt.block_on(turns_on_one_worker()), 900);
}

// pinned_inbox's park handshake in the runtime: a plain thread pushes a pinned task for a worker
// after that worker found its queues empty and before it published itself as parked (the fault
// hook before the park commit), so the push sees no parked bit and unparks nobody. The worker's
// look at its inbox after the commit must find the task; without it the task waits for the
// park timeout (counted, not timed).
TEST(Pinned, APushInTheParkWindowIsSeenByTheLookAtPark) {
    std::atomic<runtime*> target{nullptr};
    std::atomic<bool> armed{false}, pushed{false};
    std::atomic<int> moved{0}, home{-1};
    join_handle<int> h;
    config c = conformance::fresh(2);
    c.park_timeout = 2s;  // the task's wait if the look is missing (then counted)
    c.debug.before_park_commit = [&](unsigned index) {
        if (!armed.exchange(false)) return;
        home = static_cast<int>(index);
        std::thread([&] {
            h = target.load()->spawn_pinned(index, stays_put(static_cast<int>(index), 0, moved));
        }).join();
        pushed.store(true, std::memory_order_release);
    };
    runtime rt(c);
    target = &rt;
    workloads::spawn_until_fired(rt, armed, pushed);
    EXPECT_EQ(h.join(), home.load());
    const runtime_metrics m = workloads::settle(rt);
    EXPECT_EQ(m.total(&worker_metrics::unparks_timeout), 0u)
        << "the pinned task waited for its home's park timeout";
    EXPECT_EQ(moved.load(), 0);
}

task<int> aborted_forever(std::atomic<int>& ran) {
    ran.fetch_add(1);
    co_await sleep(1h);
    co_return 1;
}

TEST(Pinned, AbortFromAnotherThreadCancelsAPinnedTask) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> ran{0};
    auto h = rt.spawn_pinned(1, aborted_forever(ran));
    while (ran.load() == 0) std::this_thread::yield();
    h.abort();
    EXPECT_THROW(h.join(), task_cancelled);
}

TEST(Pinned, ShutdownCancelsQueuedAndWaitingPinnedTasks) {
    std::atomic<int> ran{0};
    std::vector<join_handle<int>> hs;
    {
        runtime rt(conformance::fresh(2));
        for (int i = 0; i < 50; ++i) hs.push_back(rt.spawn_pinned(i % 2, aborted_forever(ran)));
        while (ran.load() < 50) std::this_thread::yield();
        // Spawned from here as the runtime goes: in an inbox, or cancelled at once.
        for (int i = 0; i < 50; ++i) hs.push_back(rt.spawn_pinned(i % 2, aborted_forever(ran)));
    }
    for (auto& h : hs) EXPECT_THROW(h.join(), task_cancelled);
}

TEST(Pinned, BadTargetsAreRefused) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> moved{0};
    EXPECT_THROW((void)rt.spawn_pinned(2, stays_put(0, 0, moved)), std::out_of_range);
    EXPECT_THROW((void)spawn_local(stays_put(0, 0, moved)), std::logic_error);  // a plain thread
    EXPECT_EQ(this_worker_index(), -1);
    EXPECT_THROW((void)local_set<int>{}, std::logic_error);
}

// ---- local_set ----

// Tasks of one local_set share a plain counter: they all run on one thread.
task<void> bump_shared(int& shared, int times) {
    for (int i = 0; i < times; ++i) {
        ++shared;
        co_await yield_now();
    }
}

task<int> local_set_round() {
    local_set<void> set;
    int shared = 0;  // no atomics: every task of the set runs on this worker
    for (int i = 0; i < 20; ++i) set.spawn_local(bump_shared(shared, 50));
    EXPECT_EQ(set.size(), 20u);
    const int home = co_await set.run_until([](int h) -> task<int> {
        co_await yield_now();
        co_return this_worker_index() == h ? 1 : 0;
    }(static_cast<int>(set.home())));
    co_await set.join_all();
    EXPECT_TRUE(set.empty());
    co_return home == 1 ? shared : -1;
}

TEST(LocalSet, ItsTasksShareStateWithoutLocksOnTheMultiThreadRuntime) {
    runtime rt(conformance::fresh(4));
    EXPECT_EQ(rt.block_on(local_set_round()), 20 * 50);
}

TEST(LocalSet, WorksOnTheCurrentThreadRuntime) {
    runtime rt(config::current_thread());
    EXPECT_EQ(rt.block_on(local_set_round()), 20 * 50);
}

task<void> spawn_into(local_set<void>& set, int& spawned) {
    set.spawn_local(churn(1));  // from another worker: still pinned to the set's home
    ++spawned;
    co_return;
}

task<int> home_of_set_member(std::atomic<int>& moved, int home) {
    for (int i = 0; i < 10; ++i) {
        if (this_worker_index() != home) moved.fetch_add(1);
        co_await yield_now();
    }
    co_return this_worker_index();
}

task<bool> set_used_from_another_worker(runtime& rt) {
    local_set<int> set;
    const int home = static_cast<int>(set.home());
    const unsigned other = home == 0 ? 1 : 0;
    std::atomic<int> moved{0};
    local_set<void> plain;
    int spawned = 0;
    co_await rt.spawn_pinned(other, spawn_into(plain, spawned));
    // Spawned through the set from the other worker: the members still run on the home.
    co_await rt.spawn_pinned(other,
                             [](local_set<int>& s, std::atomic<int>& m, int h) -> task<void> {
                                 for (int i = 0; i < 10; ++i)
                                     s.spawn_local(home_of_set_member(m, h));
                                 co_return;
                             }(set, moved, home));
    int on_home = 0;
    while (auto r = co_await set.join_next()) on_home += std::move(*r).get() == home ? 1 : 0;
    co_await plain.join_all();
    co_return spawned == 1 && on_home == 10 && moved.load() == 0;
}

TEST(LocalSet, ASpawnFromAnotherWorkerStillRunsOnTheHome) {
    runtime rt(conformance::fresh(2));
    EXPECT_TRUE(rt.block_on(set_used_from_another_worker(rt)));
}

task<int> dropped_set(std::atomic<int>& ran) {
    {
        local_set<int> set;
        for (int i = 0; i < 10; ++i) set.spawn_local(aborted_forever(ran));
        while (ran.load() < 10) co_await yield_now();
    }  // aborts them
    co_return 0;
}

TEST(LocalSet, DestroyingTheSetAbortsItsTasks) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> ran{0};
    EXPECT_EQ(rt.block_on(dropped_set(ran)), 0);
    EXPECT_EQ(ran.load(), 10);
}

}  // namespace
}  // namespace blitz
