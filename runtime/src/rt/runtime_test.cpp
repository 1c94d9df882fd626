// SPDX-License-Identifier: MIT
// End-to-end runtime tests: spawn, join, yield, exceptions, cancellation, LIFO behaviour and
// shutdown (INVARIANTS K3-K5, L1-L3, I1, I2).

#include "blitz/runtime.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/scenarios.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/test_event.hpp"
#include "blitz_testing/workloads.hpp"
#include "sched/worker.hpp"

namespace blitz {
namespace {

using detail::testing::test_event;
using namespace std::chrono_literals;
using task_header_ptr = const detail::task_header*;

config with_workers(unsigned n) {
    config c;
    c.workers = n;
    return c;
}

std::uint64_t tasks_alive() { return runtime(with_workers(1)).metrics().tasks_alive; }

// Counts live instances; lets a test see that a task's locals were destroyed exactly once.
struct guard {
    static inline std::atomic<int> live{0};
    static inline std::atomic<int> destroyed{0};
    guard() { live.fetch_add(1); }
    ~guard() {
        live.fetch_sub(1);
        destroyed.fetch_add(1);
    }
    guard(const guard&) = delete;
};

task<int> answer() { co_return 42; }
using workloads::nothing;

TEST(Runtime, BlockOnReturnsTheValue) {
    runtime rt(with_workers(2));
    EXPECT_EQ(rt.block_on(answer()), 42);
    rt.block_on(nothing());
}

task<long> nested(int depth) {
    if (depth == 0) co_return 0;
    co_return 1 + co_await nested(depth - 1);
}

// How deep the awaits nest. Each level returns to its parent by symmetric transfer, which clang
// always compiles to a tail call; g++ 12 does not under AddressSanitizer, so there every level
// keeps a stack frame until the chain unwinds, and
// 10,000 levels overflow a worker's stack. The g++ ASan build checks the same at 1,000.
#if defined(__GNUC__) && !defined(__clang__) && defined(__SANITIZE_ADDRESS__)
constexpr int nesting_depth = 1'000;
#else
constexpr int nesting_depth = 10'000;
#endif

TEST(Runtime, AwaitingATaskRunsItInline) {
    runtime rt(with_workers(1));
    EXPECT_EQ(rt.block_on(nested(nesting_depth)), nesting_depth);
    auto m = rt.metrics();
    EXPECT_EQ(m.tasks_spawned, 1u);  // the nested tasks were never scheduled
}

using workloads::chain;
using workloads::fan_out;

TEST(Runtime, FanOutOfOneHundredThousandTasksCompletes) {
    for (unsigned w : {1u, 2u, 4u}) {
        runtime rt(with_workers(w));
        constexpr unsigned long n = 100'000;
        EXPECT_EQ(rt.block_on(fan_out(n)), n * (n - 1) / 2) << w << " workers";
        EXPECT_EQ(rt.metrics().tasks_spawned, n + 1);
    }
}

TEST(Runtime, ChainOfOneHundredThousandSpawnsCompletes) {
    runtime rt(with_workers(2));
    EXPECT_EQ(rt.block_on(chain(100'000)), 100'000u);
}

// A task that yields ranks below work waiting outside (G7 as amended by issue 21): the periodic
// check its yield makes due fetches the injected tasks, and they all run before it resumes (the
// yielder joins the ring behind them, as Tokio defers a yielded task behind injected work).
TEST(Runtime, AYieldingTaskResumesBehindTheTasksInjectedMeanwhile) {
    runtime rt(conformance::fresh(1));
    constexpr int injected = 32;  // within the ring fill of the periodic check (64)
    std::atomic<bool> go{false};
    std::atomic<int> ran{0};
    std::thread injector([&] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < injected; ++i) {
            rt.spawn([](std::atomic<int>& r) -> task<void> {
                  r.fetch_add(1);
                  co_return;
              }(ran))
                .detach();
        }
        go.store(false);  // all of them are in the global queue
    });
    const int ran_before_resuming =
        rt.block_on([](std::atomic<bool>& g, std::atomic<int>& r) -> task<int> {
            g.store(true);
            while (g.load()) std::this_thread::yield();  // the worker is busy: they stay queued
            co_await yield_now();
            co_return r.load();
        }(go, ran));
    injector.join();
    EXPECT_EQ(ran_before_resuming, injected);
}

// Bounded spinning before parking (config::park_spin): the last searcher spins before it
// parks; work from every source is still run, and parked workers are still woken when more
// work shows than the spinner takes (4 workers on 2 CPUs). sched/park_spin_test.cpp checks
// that the spinner counts as a searcher.
TEST(Runtime, WorkersThatSpinBeforeParkingMissNothing) {
    config c = with_workers(4);
    c.park_spin = std::chrono::microseconds(100);
    c.park_spin_adaptive = false;  // spin at every park, not only once spins have paid
    runtime rt(c);
    EXPECT_EQ(rt.block_on(chain(20'000)), 20'000u);
    constexpr unsigned long n = 20'000;
    EXPECT_EQ(rt.block_on(fan_out(n)), n * (n - 1) / 2);
    for (int i = 0; i < 50; ++i) {  // remote spawns into an idle runtime
        EXPECT_EQ(rt.spawn([]() -> task<int> { co_return 7; }()).join(), 7);
    }
}

// Issue 15, defect 2 (G2): two tasks injected while all 3 workers are busy are fetched together
// by the first worker to come free; the first spins until the second starts. The second must
// be stolen by an idle worker: before the fix it sat in the fetcher's private batch buffer.
TEST(Runtime, AFetchedBatchStaysVisibleToThieves) {
    config c = conformance::fresh(3);
    c.park_timeout = std::chrono::seconds(10);
    EXPECT_EQ(workloads::fetched_batch_stranded(c, 10, std::chrono::seconds(10)), 0);
    c.debug.hide_fetched_batch = true;  // the old behaviour, G2's control
    EXPECT_GT(workloads::fetched_batch_stranded(c, 5, std::chrono::seconds(1)), 0);
}

// Issue 15, defect 3 (G7): a periodic global check takes one task, so the yields of an
// overflowing fan-out do not pull the worker's own overflowed tasks back by the batch.
TEST(Runtime, AYieldDoesNotChurnOverflowedTasksThroughTheGlobalQueue) {
    // Ring/global crossings (overflowed + fetched) per task of an awaited fan-out tree.
    auto crossings = [](unsigned long every, bool fault) {
        config c = conformance::fresh(1);
        c.debug.periodic_fetch_batches = fault;
        runtime rt(c);
        const unsigned long n = rt.block_on(workloads::yield_tree(2, 200, every));
        const runtime_metrics m = rt.metrics();
        return double(m.ring_global_crossings()) / double(n);
    };
    const double no_yields = crossings(1'000'000, false);
    const double yields = crossings(8, false), churn = crossings(8, true);
    std::printf(
        "crossings per task: no yields %.2f, a yield every 8th task %.2f (%.2f with the "
        "periodic check fetching a batch)\n",
        no_yields, yields, churn);
    // A periodic check moves one task back, or (G7 as amended by issue 21) fills a ring below
    // a quarter full: 0.37 more crossings per task with one task per check, 0.46 with the
    // fill, on the development VM; the control adds 2.9.
    EXPECT_LT(yields, no_yields + 0.8);
    EXPECT_GT(churn, no_yields + 1.5) << "the control should churn";  // 2.8 more here
}

// Issue 21 (G7 amended): one worker whose only local task yields in a loop drains tasks
// injected from outside by the batch, not one per yield. Each periodic check used to take one
// task, so spawn_many_remote_busy1 (yielding loops that stall 10 us) ran 30x slower than Tokio.
TEST(Runtime, InjectedTasksDrainByTheBatchBehindAYieldingLoop) {
    auto global_fetches = [](bool fault) {
        config c = conformance::fresh(1);
        c.debug.periodic_fetch_one = fault;
        runtime rt(c);
        // The loop holds the only worker until all 500 are queued, then yields until they ran.
        std::atomic<bool> go{false}, spin{true};
        auto loop = rt.spawn([](std::atomic<bool>& go, std::atomic<bool>& spin) -> task<void> {
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            while (spin.load(std::memory_order_relaxed)) co_await yield_now();
        }(go, spin));
        while (rt.metrics().total(&worker_metrics::polls) < 1) std::this_thread::yield();
        std::vector<join_handle<unsigned long>> hs;
        for (int i = 0; i < 500; ++i) hs.push_back(rt.spawn(workloads::leaf(i)));
        go = true;
        for (auto& h : hs) h.join();
        spin = false;
        loop.join();
        return rt.metrics().total(&worker_metrics::global_fetch_ops);
    };
    const std::uint64_t batched = global_fetches(false), one = global_fetches(true);
    std::printf("global fetches for 500 injected tasks: %llu (%llu taking one per check)\n",
                static_cast<unsigned long long>(batched), static_cast<unsigned long long>(one));
    EXPECT_LT(batched, 50u);  // 25 here
    EXPECT_GE(one, 500u) << "the control should take one task per check";
}

// Issue 45 (G6): a worker whose ring holds 32 yielding loops of 100 us polls (interval 10)
// takes a pair of injected tasks one at a time; filling its ring with the rest of a batch put
// the second behind all 32 loops (d1b0fd4), where the next periodic check comes a poll later.
TEST(Runtime, InjectedWorkIsNotQueuedBehindMoreThanAnIntervalOfLocalPolls) {
    config c = conformance::fresh(1);
    const auto fixed = workloads::injected_waits(c, 32, 10, std::chrono::microseconds(100));
    c.debug.periodic_fill_past_interval = true;
    const auto control = workloads::injected_waits(c, 32, 10, std::chrono::microseconds(100));
    EXPECT_EQ(fixed.over, 0) << fixed.first_over;
    EXPECT_GT(fixed.samples, 0);
    EXPECT_GT(control.over, 0) << "the control should queue the second task behind the loops";
}

// Issue 15: worker RNG seeds come from config::seed, so a run's steal decisions replay: each
// victim walk draws one number, so every worker's sequence of walk starts is the same in two
// runs with the same seed, however their timing differs (compared over the common prefix).
TEST(Runtime, AFixedSeedReplaysEveryWorkersVictimChoices) {
    auto walk_starts = [](std::uint64_t seed) {
        config c = conformance::fresh(4);
        c.seed = seed;
        c.probes = true;
        runtime rt(c);
        for (int r = 0; r < 20; ++r) rt.block_on(workloads::tree(3, 8));
        std::vector<std::vector<std::uint32_t>> starts(4);
        const probe_streams s = rt.take_probes();
        for (unsigned w = 0; w < 4; ++w) {
            for (const probe_event& e : s.workers[w]) {
                if (e.kind == probe_kind::steal_walk) starts[w].push_back(e.a);
            }
        }
        return starts;
    };
    const auto a = walk_starts(12345), b = walk_starts(12345), c = walk_starts(54321);
    std::size_t compared = 0, differ_from_c = 0;
    for (unsigned w = 0; w < 4; ++w) {
        const std::size_t n = std::min(a[w].size(), b[w].size());
        for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(a[w][i], b[w][i]) << "worker " << w;
        compared += n;
        for (std::size_t i = 0; i < std::min(a[w].size(), c[w].size()); ++i)
            differ_from_c += a[w][i] != c[w][i];
    }
    EXPECT_GT(compared, 20u);
    EXPECT_GT(differ_from_c, 0u) << "another seed should choose differently";
}

TEST(Runtime, SpawnFromATaskLandsInTheLocalWorkersLifoSlot) {
    // One worker: with a second one, a thief may steal the evicted task from the ring between
    // the spawn and the length check (seen under load), which says nothing about L1.
    runtime rt(with_workers(1));
    auto body = [&]() -> task<bool> {
        detail::worker* me = detail::current_worker();
        const unsigned idx = me->index();
        const bool slot_was_empty = me->lifo_peek() == nullptr;
        const auto before = rt.metrics().workers[idx].spawned_local;
        auto h = spawn(answer());
        // L1: the child sits in this worker's LIFO slot (read on the owner thread).
        const bool in_slot = me->lifo_peek() != nullptr;
        const bool counted = rt.metrics().workers[idx].spawned_local == before + 1;
        // A second spawn takes the slot; the previous occupant moves to the ring tail.
        const task_header_ptr first = me->lifo_peek();
        const auto ring_before = me->ring().len();
        auto h2 = spawn(answer());
        const bool evicted = me->lifo_peek() != first && me->ring().len() == ring_before + 1;
        co_return slot_was_empty&& in_slot&& counted&& evicted&& co_await h == 42 &&
            co_await h2 == 42;
    };
    EXPECT_TRUE(rt.block_on(body()));
}

TEST(Runtime, SpawnOutsideARuntimeIsAClearError) {
    EXPECT_THROW((void)spawn(answer()), std::logic_error);
}

TEST(Runtime, BlockOnFromInsideATaskIsAClearError) {
    runtime rt(with_workers(1));
    auto body = [&]() -> task<bool> {
        try {
            rt.block_on(answer());
        } catch (const std::logic_error&) {
            co_return true;
        }
        co_return false;
    };
    EXPECT_TRUE(rt.block_on(body()));
}

task<int> thrower() {
    throw std::runtime_error("boom");
    co_return 0;
}

TEST(Runtime, AnExceptionReachesTheJoinHandleAndTheWorkerSurvives) {
    runtime rt(with_workers(1));
    EXPECT_THROW(rt.block_on(thrower()), std::runtime_error);
    auto from_task = []() -> task<bool> {
        try {
            co_await spawn(thrower());
        } catch (const std::runtime_error& e) {
            co_return std::string(e.what()) == "boom";
        }
        co_return false;
    };
    EXPECT_TRUE(rt.block_on(from_task()));
    EXPECT_EQ(rt.block_on(answer()), 42);  // the single worker is still serving
}

task<int> wait_then(test_event& ev, int v) {
    co_await ev.wait();
    co_return v;
}

TEST(Runtime, AwaitingAJoinHandleWakesWhenTheResultIsReady) {
    runtime rt(with_workers(2));
    test_event ev;
    auto inner = rt.spawn(wait_then(ev, 7));
    auto outer = rt.spawn(
        [](join_handle<int> h) -> task<int> { co_return 1 + co_await h; }(std::move(inner)));
    std::this_thread::sleep_for(5ms);
    EXPECT_FALSE(outer.is_finished());
    ev.set();
    EXPECT_EQ(outer.join(), 8);
}

TEST(Runtime, YieldNowLetsQueuedTasksRunFirst) {
    runtime rt(with_workers(1));
    auto body = []() -> task<bool> {
        std::atomic<bool> ran{false};
        auto h = spawn([](std::atomic<bool>& f) -> task<void> {
            f = true;
            co_return;
        }(ran));
        co_await yield_now();  // the child (in the LIFO slot) runs before we resume
        co_await h;
        co_return ran.load();
    };
    EXPECT_TRUE(rt.block_on(body()));
}

// ---- cancellation (K4) ----

task<void> guarded_wait(test_event& ev) {
    guard g;
    co_await ev.wait();
}

TEST(Cancel, AbortingAnIdleTaskCompletesItsHandleAsCancelled) {
    runtime rt(with_workers(2));
    test_event ev;
    const int destroyed0 = guard::destroyed.load();
    auto h = rt.spawn(guarded_wait(ev));
    while (guard::live.load() == 0) std::this_thread::yield();  // it is waiting now
    h.abort();
    EXPECT_THROW(h.join(), task_cancelled);
    EXPECT_TRUE(h.is_cancelled());
    EXPECT_EQ(guard::destroyed.load() - destroyed0, 1);  // its locals were destroyed once
    EXPECT_EQ(guard::live.load(), 0);
}

TEST(Cancel, AbortingARunningTaskCancelsItAtItsNextSuspension) {
    runtime rt(with_workers(2));
    std::atomic<int> spins{0};
    auto h = rt.spawn([](std::atomic<int>& s) -> task<void> {
        for (;;) {
            s.fetch_add(1);
            co_await yield_now();
        }
    }(spins));
    while (spins.load() < 100) std::this_thread::yield();
    h.abort();
    EXPECT_THROW(h.join(), task_cancelled);
}

TEST(Cancel, AbortingAQueuedTaskMeansItsBodyNeverRuns) {
    runtime rt(with_workers(1));
    std::atomic<bool> release{false}, started{false}, body_ran{false};
    auto blocker = rt.spawn([](std::atomic<bool>& r, std::atomic<bool>& s) -> task<void> {
        s = true;
        while (!r.load()) std::this_thread::yield();  // occupies the only worker
        co_return;
    }(release, started));
    while (!started.load()) std::this_thread::yield();
    auto victim = rt.spawn([](std::atomic<bool>& ran) -> task<void> {
        ran = true;
        co_return;
    }(body_ran));
    victim.abort();
    release = true;
    EXPECT_THROW(victim.join(), task_cancelled);
    blocker.join();
    EXPECT_FALSE(body_ran.load());
}

TEST(Cancel, AShieldDefersCancellationUntilItIsDropped) {
    runtime rt(with_workers(2));
    test_event inside, proceed;
    std::atomic<bool> finished_shielded_part{false}, after_shield{false};
    auto h = rt.spawn([](test_event& in, test_event& go, std::atomic<bool>& done,
                         std::atomic<bool>& after) -> task<void> {
        {
            cancel_shield s;
            in.set();
            co_await go.wait();  // aborted while waiting here: deferred
            done = true;
        }
        co_await yield_now();  // the first suspension without a shield: cancelled here
        after = true;
    }(inside, proceed, finished_shielded_part, after_shield));
    while (!inside.is_set()) std::this_thread::yield();
    h.abort();
    proceed.set();
    EXPECT_THROW(h.join(), task_cancelled);
    EXPECT_TRUE(finished_shielded_part.load());
    EXPECT_FALSE(after_shield.load());
}

TEST(Cancel, AbortAfterCompletionKeepsTheResult) {
    runtime rt(with_workers(1));
    auto h = rt.spawn(answer());
    while (!h.is_finished()) std::this_thread::yield();
    h.abort();
    EXPECT_EQ(h.join(), 42);
}

// ---- LIFO slot (L2, L3) ----

std::size_t polls_before_third(unsigned lifo_cap) {
    return workloads::polls_before_queued_task(lifo_cap);
}

TEST(Lifo, CapBoundsPollsBeforeAQueuedTaskRuns) {
    // L2/L3: with the cap of 3, the third task runs after at most 3 LIFO polls.
    EXPECT_LE(polls_before_third(3), 3u);
}

TEST(Lifo, WithTheCapRaisedTheQueuedTaskStarves) {
    // The negative control: a cap of 127 (the highest below the budget) lets the pair run far past
    // 3 polls.
    EXPECT_GT(polls_before_third(127), 3u);
}

TEST(Lifo, TheCapHoldsAcrossTheTickBoundary) {
    // L3 (issue 45): at a budget of 8, every phase of the exchange in the tick; the cap reached
    // on a tick's last poll must not give the pair three more polls in the next tick.
    for (unsigned phase = 0; phase < 8; ++phase) {
        EXPECT_LE(workloads::polls_before_queued_task(3, 8, phase), 3u) << "phase " << phase;
    }
}

TEST(Lifo, ACountRestartedEveryTickLetsThePairRunTwiceTheCap) {
    // The control: with the count reset at each tick, some phase lets the pair run past the cap.
    std::size_t worst = 0;
    for (unsigned phase = 0; phase < 8; ++phase) {
        worst = std::max(worst, workloads::polls_before_queued_task(3, 8, phase, [](config& c) {
                             c.debug.lifo_count_per_tick = true;
                         }));
    }
    EXPECT_GT(worst, 3u);
    EXPECT_LE(worst, 6u) << "at most twice the cap";
}

TEST(Lifo, TheCapCountsPollsInARowNotPerTick) {
    // L2 as amended by issue 21: a task that spawns a child and awaits it, 2,000 times on one
    // worker, hands the worker back and forth through the slot. With the cap counted per tick
    // a tick of 128 polls took at most 3 of them from the slot; counted per run of LIFO polls,
    // three of every four polls come from it.
    runtime rt(with_workers(1));
    const auto before = rt.metrics();
    rt.block_on([]() -> task<void> {
        for (int i = 0; i < 2'000; ++i) co_await spawn([]() -> task<void> { co_return; }());
    }());
    const auto after = rt.metrics();
    const auto delta = [&](std::uint64_t worker_metrics::* f) {
        return after.total(f) - before.total(f);
    };
    const std::uint64_t ticks = delta(&worker_metrics::ticks);
    const std::uint64_t lifo = delta(&worker_metrics::lifo_hits);
    EXPECT_GT(lifo, 3 * ticks) << "ticks " << ticks << ", LIFO polls " << lifo;
    EXPECT_GE(lifo, 2 * delta(&worker_metrics::polls) / 3);
}

// ---- shutdown and lifetime (K3) ----

TEST(Shutdown, DestroysQueuedWaitingAndIdleTasksExactlyOnce) {
    const std::uint64_t alive0 = tasks_alive();
    const int destroyed0 = guard::destroyed.load();
    test_event never;
    int made = 0;
    {
        std::vector<join_handle<void>> keep;
        {
            runtime rt(with_workers(2));
            // Waiting (idle, reachable only through the event's waker).
            for (int i = 0; i < 50; ++i, ++made) keep.push_back(rt.spawn(guarded_wait(never)));
            // Idle on a join handle of a task that never finishes.
            for (int i = 0; i < 50; ++i, made += 2) {
                auto h = rt.spawn(guarded_wait(never));
                rt.spawn([](join_handle<void> inner) -> task<void> {
                      guard g;
                      co_await inner;
                  }(std::move(h)))
                    .detach();
            }
            // Queued: many tasks that yield forever, so the queues are full at shutdown.
            for (int i = 0; i < 2000; ++i, ++made) {
                rt.spawn([]() -> task<void> {
                      guard g;
                      for (;;) co_await yield_now();
                  }())
                    .detach();
            }
            while (guard::live.load() < 100) std::this_thread::yield();
        }  // runtime destroyed here
        for (auto& h : keep) EXPECT_TRUE(h.is_cancelled());
        EXPECT_EQ(guard::live.load(), 0);
    }
    // Each task's locals are destroyed exactly once, whether or not its body had started.
    EXPECT_LE(guard::destroyed.load() - destroyed0, made);
    EXPECT_EQ(guard::live.load(), 0);
    // Every task allocation is freed once all handles are gone.
    EXPECT_EQ(tasks_alive(), alive0);
}

TEST(Shutdown, DetachedTasksFreeThemselves) {
    const std::uint64_t alive0 = tasks_alive();
    {
        runtime rt(with_workers(2));
        std::atomic<int> done{0};
        for (int i = 0; i < 1000; ++i) {
            rt.spawn([](std::atomic<int>& d) -> task<void> {
                  d.fetch_add(1);
                  co_return;
              }(done))
                .detach();
        }
        while (done.load() < 1000) std::this_thread::yield();
    }
    EXPECT_EQ(tasks_alive(), alive0);
}

TEST(Shutdown, SpawnAfterShutdownIsCancelledAtOnce) {
    runtime rt(with_workers(1));
    rt.shutdown();
    auto h = rt.spawn(answer());
    EXPECT_TRUE(h.is_cancelled());
    EXPECT_THROW(h.join(), task_cancelled);
}

// ---- idle bookkeeping at quiescence (I1, I2) ----

TEST(Idle, QuiescentRuntimeHasNoSearchersAndBitmapMatchesParkedCount) {
    for (unsigned w : {1u, 2u, 4u, 8u}) {
        runtime rt(with_workers(w));
        rt.block_on(fan_out(20'000));
        const runtime_metrics m = workloads::settle(rt);
        EXPECT_EQ(m.num_searching, 0u) << w << " workers";
        EXPECT_EQ(m.num_parked, w);
        EXPECT_EQ(m.parked_bits(), m.num_parked);
        EXPECT_TRUE(workloads::parked_exactly_first(m, w));
    }
}

}  // namespace
}  // namespace blitz

namespace blitz {
namespace {

// I4 at the protocol's narrowest point (see workloads::park_window): the final check must
// catch a task queued while the last searcher parks; skipping it is the negative control.
runtime_metrics task_in_the_park_window(bool skip_check, std::chrono::nanoseconds park_timeout) {
    const auto r = workloads::park_window(skip_check, park_timeout);
    EXPECT_TRUE(r.lifo_stayed_empty);  // L4
    return r.metrics;
}

TEST(LastSearcher, FinalCheckFindsATaskQueuedWhileItWasParking) {
    auto m = task_in_the_park_window(/*skip_check=*/false, 10s);
    EXPECT_EQ(m.total(&worker_metrics::timeout_wakes_found_work), 0u);
    EXPECT_GE(m.total(&worker_metrics::park_cancels), 1u);
}

TEST(TaskMemory, TasksThatCompletedOnOtherWorkersAreFreedWithoutASweep) {
    // Issue 45, item 3: one task spawns 1,000 long-lived tasks and a burst of 200, all listed
    // by its worker, which then parks. The burst is woken from this thread (through the global
    // queue: any worker runs it) and completes, mostly elsewhere. Every block of the burst must
    // be back once the runtime is at rest again: the owner takes the burst from its inbox.
    // (Before, with 1,000 entries kept since the last sweep and 200 new, no sweep was due and
    // the burst stayed allocated until the list doubled.)
    runtime rt(conformance::fresh(4));
    workloads::settle(rt);
    const std::uint64_t base = rt.metrics().tasks_alive;
    cancellation_token long_lived, burst;
    rt.block_on([](cancellation_token keep, cancellation_token go) -> task<void> {
        for (int i = 0; i < 1000; ++i) {
            (void)spawn([](cancellation_token t) -> task<void> { co_await t.cancelled(); }(keep));
        }
        for (int i = 0; i < 200; ++i) {
            (void)spawn([](cancellation_token t) -> task<void> { co_await t.cancelled(); }(go));
        }
        co_return;
    }(long_lived, burst));
    workloads::settle(rt);
    EXPECT_EQ(rt.metrics().tasks_alive, base + 1200);
    burst.cancel();
    runtime_metrics m = workloads::settle(rt);
    for (int i = 0; i < 1000 && m.tasks_alive != base + 1000; ++i) m = workloads::settle(rt);
    EXPECT_EQ(m.tasks_alive, base + 1000) << "the burst's blocks are back, the others live";
    long_lived.cancel();
    m = workloads::settle(rt);
    for (int i = 0; i < 1000 && m.tasks_alive != base; ++i) m = workloads::settle(rt);
    EXPECT_EQ(m.tasks_alive, base);
}

TEST(TaskMemory, TasksEndingInTheirFirstPollWhileTheirHandlesGoAreFreedOnce) {
    // The short completion (task_header::complete_unshared): a task that ends in its first poll
    // frees its block at once when its runner holds the only references. Here the handles are
    // dropped or detached on this thread while 4 workers run the tasks, so each completion races
    // its handle's last reference; and a task whose handle is kept ends the long way and is
    // still joined. Every block must be back and every result seen (under TSan: no race).
    runtime rt(conformance::fresh(4));
    workloads::settle(rt);
    const std::uint64_t base = rt.metrics().tasks_alive;
    std::atomic<int> ran{0};
    for (int round = 0; round < 20; ++round) {
        std::vector<join_handle<int>> kept;
        for (int i = 0; i < 1000; ++i) {
            auto h = rt.spawn([](std::atomic<int>& r, int v) -> task<int> {
                r.fetch_add(1, std::memory_order_relaxed);
                co_return v;
            }(ran, i));
            if (i % 3 == 0) {
                h.detach();
            } else if (i % 3 == 1) {
                kept.push_back(std::move(h));
            }  // else: dropped here
        }
        for (std::size_t k = 0; k < kept.size(); ++k) {
            EXPECT_EQ(kept[k].join(), static_cast<int>(3 * k + 1));
        }
    }
    runtime_metrics m = workloads::settle(rt);
    for (int i = 0; i < 1000 && m.tasks_alive != base; ++i) m = workloads::settle(rt);
    EXPECT_EQ(m.tasks_alive, base);
    EXPECT_EQ(ran.load(), 20'000);
}

TEST(TimeoutWake, WithEveryOtherWorkerParkedLooksAtNoRing) {
    // I10: an idle runtime's timeout wakes find every other worker parked (their rings empty),
    // and look at the global queue only. Whether a given wake finds the others parked depends
    // on who else is awake then, so the test asks for one such wake among the many of an idle
    // spell (about 8 x 40 of them) and for the sampled walks never to exceed their 4 rings.
    config c;
    c.workers = 8;
    c.park_timeout = 1ms;
    c.probes = true;
    c.probe_kinds = probe_kinds_of({probe_kind::steal_walk});
    runtime rt(c);
    rt.block_on([]() -> task<void> { co_return; }());
    runtime_metrics m = rt.metrics();
    for (int i = 0; i < 10'000 && m.total(&worker_metrics::timeout_looks_skipped) == 0; ++i) {
        std::this_thread::sleep_for(1ms);
        m = rt.metrics();
    }
    EXPECT_GE(m.total(&worker_metrics::timeout_looks_skipped), 1u);
    rt.shutdown();
    std::uint64_t empty = 0;
    for (const auto& w : rt.take_probes().workers) {
        for (const probe_event& e : w) {
            EXPECT_EQ(e.kind, probe_kind::steal_walk) << "probe_kinds filters the rest";
            empty += e.c == 0;
        }
    }
    EXPECT_GE(empty, 1u);
}

TEST(LastSearcher, WithoutTheFinalCheckTheTaskIsStrandedUntilATimeout) {
    // Negative control: the same window with the check skipped strands the task; only the
    // (shortened) park timeout rescues it, and the counter that the stress check reads says so.
    auto m = task_in_the_park_window(/*skip_check=*/true, 50ms);
    EXPECT_GE(m.total(&worker_metrics::timeout_wakes_found_work), 1u);
}

}  // namespace
}  // namespace blitz

namespace blitz {
namespace {

// G4: a worker saturated by a self-waking task still checks the global queue every
// `interval` polls (interval <= global_interval_max), so a task injected from outside runs.
// Verdicts come from the worker's own counters: periodic checks versus polls. The busy task stops
// only once the injected task has run, so starvation would hang the test rather than pass it.
runtime_metrics saturated_with_injection(unsigned interval_min, unsigned interval_max) {
    config c = with_workers(1);
    c.global_interval_min = interval_min;
    c.global_interval_max = interval_max;
    runtime rt(c);
    std::atomic<std::uint64_t> yields{0};
    std::atomic<bool> stop{false};
    auto busy = rt.spawn([](std::atomic<std::uint64_t>& y, std::atomic<bool>& s) -> task<void> {
        while (!s.load()) {
            y.fetch_add(1);
            co_await yield_now();
        }
    }(yields, stop));
    while (yields.load() < 5000) std::this_thread::yield();
    rt.spawn([](std::atomic<bool>& s) -> task<void> {
          s = true;
          co_return;
      }(stop))
        .join();
    busy.join();
    return rt.metrics();
}

TEST(GlobalQueue, SaturatedWorkerChecksTheGlobalQueueEveryIntervalPolls) {
    for (unsigned hi : {255u, 8u}) {
        const worker_metrics w = saturated_with_injection(8, hi).workers[0];
        EXPECT_GE(w.polls, 5000u);
        EXPECT_GE(w.global_periodic + 1, w.polls / hi) << "interval max " << hi;
        EXPECT_LE(w.global_interval, hi);
    }
}

}  // namespace
}  // namespace blitz

namespace blitz {
namespace {

// A wake left over from an earlier registration (a "stray" wake) must not resume an awaitable
// that is not ready: the join awaiter stays suspended until its task really completes.
TEST(StrayWake, DoesNotResumeAnAwaitableThatIsNotReady) {
    runtime rt(with_workers(2));
    test_event release;
    std::mutex mu;
    waker stray;  // guarded by mu
    std::atomic<bool> armed{false}, resumed{false};
    auto waiter = rt.spawn([](test_event& ev, std::mutex& m, waker& out, std::atomic<bool>& arm,
                              std::atomic<bool>& res) -> task<int> {
        {
            std::lock_guard<std::mutex> l(m);
            out = detail::current_task()->make_waker();  // kept beyond its use: a stray
        }
        auto inner = spawn(wait_then(ev, 5));
        arm = true;
        int v = co_await inner;
        res = true;
        co_return v;
    }(release, mu, stray, armed, resumed));
    while (!armed.load()) std::this_thread::yield();
    std::this_thread::sleep_for(2ms);  // let it suspend on the join handle
    {
        std::lock_guard<std::mutex> l(mu);
        std::move(stray).wake();
    }
    // Wait (by count) for the stray wake to be polled and rejected.
    for (int i = 0; i < 100'000 && rt.metrics().total(&worker_metrics::stray_wakes) == 0; ++i) {
        std::this_thread::sleep_for(100us);
    }
    EXPECT_GE(rt.metrics().total(&worker_metrics::stray_wakes), 1u);
    EXPECT_FALSE(resumed.load());
    release.set();
    EXPECT_EQ(waiter.join(), 5);
}

}  // namespace
}  // namespace blitz
