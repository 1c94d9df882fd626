// SPDX-License-Identifier: MIT
// Unit tests of the sync primitives (issue 6, X2-X4): order, partial grants, cancellation,
// leaders per generation, permit non-accumulation, once-only initialization.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz/testing.hpp"
#include "blitz_testing/suite.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

using workloads::let_others_run;

task<void> acquire_and_log(semaphore& s, std::size_t n, int id, std::vector<int>& log) {
    auto p = co_await s.acquire(n);
    log.push_back(id);
    p.forget();  // keep them: the test releases explicitly
}

TEST(Semaphore, WaitersAreServedInArrivalOrder) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        semaphore s(0);
        std::vector<int> log;
        std::vector<join_handle<void>> hs;
        for (int i = 0; i < 5; ++i) {
            hs.push_back(spawn(acquire_and_log(s, 1, i, log)));
            co_await let_others_run();
        }
        EXPECT_EQ(s.waiters(), 5u);
        for (int i = 0; i < 5; ++i) {
            s.release(1);
            co_await let_others_run();
            EXPECT_EQ(log.size(), static_cast<std::size_t>(i + 1));
        }
        EXPECT_EQ(log, (std::vector<int>{0, 1, 2, 3, 4}));
        for (auto& h : hs) co_await h;
    }());
}

TEST(Semaphore, PartialGrantGoesToTheNextWaiterOnCancel) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        semaphore s(1);
        std::vector<int> log;
        auto a = spawn(acquire_and_log(s, 3, 0, log));  // takes the 1 free permit, waits for 2
        co_await let_others_run();
        EXPECT_EQ(s.available(), 0u);
        auto b = spawn(acquire_and_log(s, 1, 1, log));  // behind a: FIFO, gets nothing yet
        co_await let_others_run();
        s.release(1);  // a now holds 2 of 3
        co_await let_others_run();
        EXPECT_TRUE(log.empty());
        EXPECT_EQ(s.available(), 0u);  // X2: never free while someone waits
        a.abort();                     // a's 2 go on: 1 to b, 1 back to the free count
        co_await let_others_run();
        EXPECT_EQ(log, (std::vector<int>{1}));
        EXPECT_EQ(s.available(), 1u);
        co_await b;
        EXPECT_EQ(s.waiters(), 0u);
    }());
}

TEST(Semaphore, PermitsComeBackAndTheMaximumHolds) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        semaphore s(2, 3);
        {
            auto p = co_await s.acquire(2);
            EXPECT_EQ(p.count(), 2u);
            EXPECT_EQ(s.available(), 0u);
            EXPECT_FALSE(s.try_acquire(1).has_value());
        }
        EXPECT_EQ(s.available(), 2u);
        s.release(1);
        EXPECT_EQ(s.available(), 3u);
        EXPECT_THROW(s.release(1), std::overflow_error);
        EXPECT_THROW(s.release(SIZE_MAX), std::overflow_error);  // no wrap-around past the check
        EXPECT_EQ(s.available(), 3u);
        EXPECT_THROW((void)s.acquire(4), std::invalid_argument);
        auto none = co_await s.acquire(0);
        EXPECT_EQ(none.count(), 0u);
    }());
    EXPECT_THROW(semaphore(5, 4), std::invalid_argument);
}

// A semaphore with tickets: each permit try_acquire_ticket takes comes with the next ticket,
// take_ticket hands out the next without a permit, tickets wrap at 2^32 without touching the
// count, a failed try takes no ticket, and the count stays below 2^31.
TEST(Semaphore, TicketsComeInOrderWithTheirPermitsAndWrap) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        semaphore s(2, 2, semaphore::with_tickets, 0xFFFFFFFEu);
        std::uint32_t t = 0;
        EXPECT_TRUE(s.try_acquire_ticket(t));
        EXPECT_EQ(t, 0xFFFFFFFEu);
        EXPECT_EQ(s.take_ticket(), 0xFFFFFFFFu);
        EXPECT_TRUE(s.try_acquire_ticket(t));
        EXPECT_EQ(t, 0u);  // wrapped; the count did not notice
        EXPECT_EQ(s.available(), 0u);
        EXPECT_FALSE(s.try_acquire_ticket(t));
        s.release(2);
        EXPECT_EQ(s.available(), 2u);
        EXPECT_EQ(s.next_ticket(), 1u);
        {
            auto all = co_await s.acquire(2);
            EXPECT_FALSE(s.try_acquire_ticket(t));
        }
        EXPECT_EQ(s.available(), 2u);
        EXPECT_EQ(s.next_ticket(), 1u);  // permits alone, and failed tries, take no ticket
    }());
    EXPECT_THROW(semaphore(0, semaphore::max_with_tickets + 1, semaphore::with_tickets),
                 std::invalid_argument);
    semaphore big(semaphore::max_with_tickets, semaphore::max_with_tickets,
                  semaphore::with_tickets);
    EXPECT_EQ(big.available(), semaphore::max_with_tickets);
    EXPECT_EQ(big.next_ticket(), 0u);
}

TEST(Semaphore, LifoFaultServesNewestFirst) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        semaphore s(0);
        testing::set_faults(s, {.lifo = true});
        std::vector<int> log;
        std::vector<join_handle<void>> hs;
        for (int i = 0; i < 3; ++i) {
            hs.push_back(spawn(acquire_and_log(s, 1, i, log)));
            co_await let_others_run();
        }
        for (int i = 0; i < 3; ++i) {
            s.release(1);
            co_await let_others_run();
        }
        EXPECT_EQ(log, (std::vector<int>{2, 1, 0}));  // what X2's control must show
        for (auto& h : hs) co_await h;
    }());
}

task<void> count_under_lock(mutex& m, long& counter, int n) {
    for (int i = 0; i < n; ++i) {
        auto g = co_await m.lock();
        const long v = counter;
        if (i % 7 == 0) co_await yield_now();  // hold the lock across a suspension
        counter = v + 1;
    }
}

TEST(Mutex, CounterIsExactAcrossWorkers) {
    runtime rt(conformance::fresh(4));
    mutex m;
    long counter = 0;
    std::vector<join_handle<void>> hs;
    for (int t = 0; t < 16; ++t) hs.push_back(rt.spawn(count_under_lock(m, counter, 500)));
    for (auto& h : hs) h.join();
    EXPECT_EQ(counter, 16 * 500);
    EXPECT_FALSE(m.is_locked());
}

TEST(Mutex, TryLockAndGuardRelease) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        mutex m;
        auto g = m.try_lock();
        EXPECT_TRUE(g.has_value());
        if (!g) co_return;
        EXPECT_TRUE(m.is_locked());
        EXPECT_FALSE(m.try_lock().has_value());
        g->unlock();
        EXPECT_FALSE(m.is_locked());
        auto g2 = co_await m.lock();
        EXPECT_TRUE(g2.owns_lock());
    }());
}

TEST(RwLock, QueuedWriterBlocksNewReaders) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        rwlock l;
        std::vector<int> log;
        auto r1 = co_await l.read();
        EXPECT_TRUE(l.try_read().has_value());  // readers share
        auto w = spawn([](rwlock& l, std::vector<int>& log) -> task<void> {
            auto g = co_await l.write();
            log.push_back(1);
        }(l, log));
        co_await let_others_run();
        EXPECT_FALSE(l.try_read().has_value());  // X3: the queued writer goes first
        auto r2 = spawn([](rwlock& l, std::vector<int>& log) -> task<void> {
            auto g = co_await l.read();
            log.push_back(2);
        }(l, log));
        co_await let_others_run();
        EXPECT_TRUE(log.empty());
        r1.unlock();
        co_await w;
        co_await r2;
        EXPECT_EQ(log, (std::vector<int>{1, 2}));
    }());
}

TEST(Notify, OnePermitIsStoredAndDoesNotAccumulate) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        notify n;
        n.notify_one();
        n.notify_one();
        EXPECT_EQ(n.stored_permits(), 1u);
        co_await n.notified();  // consumes it at once
        EXPECT_EQ(n.stored_permits(), 0u);
        n.notify_all();
        EXPECT_EQ(n.stored_permits(), 0u);  // notify_all stores nothing
    }());
}

TEST(Notify, NotifyOneWakesOneNotifyAllWakesTheRest) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        notify n;
        std::atomic<int> woken{0};
        std::vector<join_handle<void>> hs;
        for (int i = 0; i < 3; ++i) {
            hs.push_back(spawn([](notify& n, std::atomic<int>& w) -> task<void> {
                co_await n.notified();
                w.fetch_add(1);
            }(n, woken)));
        }
        co_await let_others_run();
        n.notify_one();
        co_await let_others_run();
        EXPECT_EQ(woken.load(), 1);
        n.notify_all();
        co_await let_others_run();
        EXPECT_EQ(woken.load(), 3);
        EXPECT_EQ(n.stored_permits(), 0u);
        for (auto& h : hs) co_await h;
    }());
}

// A waiter woken by notify_one and aborted before it resumed hands the notification on: to the
// next waiter, or, with nobody left, as the stored permit.
TEST(Notify, AnAbortedWakeIsHandedOn) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        notify n;
        std::atomic<int> woken{0};
        auto wait = [](notify& n, std::atomic<int>& w) -> task<void> {
            co_await n.notified();
            w.fetch_add(1);
        };
        auto a = spawn(wait(n, woken));
        auto b = spawn(wait(n, woken));
        co_await let_others_run();
        n.notify_one();  // wakes a; b still waits
        a.abort();       // before a resumes (one worker, this task runs)
        co_await let_others_run();
        EXPECT_EQ(woken.load(), 1) << "b got a's notification";
        EXPECT_EQ(n.stored_permits(), 0u);
        auto c = spawn(wait(n, woken));
        co_await let_others_run();
        n.notify_one();
        c.abort();
        co_await let_others_run();
        EXPECT_EQ(n.stored_permits(), 1u) << "nobody left: the notification is stored";
        co_await n.notified();
        try {
            co_await a;
        } catch (const task_cancelled&) {
        }
        co_await b;
        try {
            co_await c;
        } catch (const task_cancelled&) {
        }
    }());
}

// notify_one from plain threads (the lock-free permit) against tasks that wait and are woken
// under the lock: every notification lets exactly one task through. Run under ThreadSanitizer.
TEST(Notify, PlainThreadNotifiesAgainstWaitingTasksLoseNothing) {
    runtime rt(conformance::fresh(2));
    constexpr int rounds = 2000;
    notify n;
    std::atomic<int> through{0};
    auto waiter = rt.spawn([](notify& n, std::atomic<int>& t) -> task<void> {
        for (int i = 0; i < rounds; ++i) {
            co_await n.notified();
            t.fetch_add(1);
        }
    }(n, through));
    std::thread plain([&] {
        for (int i = 0; i < rounds; ++i) {
            n.notify_one();
            // the next notification only once this one let the task through (none accumulate)
            while (through.load() <= i) std::this_thread::yield();
        }
    });
    plain.join();
    rt.block_on([](join_handle<void>& h) -> task<void> { co_await h; }(waiter));
    EXPECT_EQ(through.load(), rounds);
    EXPECT_EQ(n.stored_permits(), 0u);
}

TEST(Barrier, OneLeaderPerGenerationAndReusable) {
    runtime rt(conformance::fresh(4));
    barrier b(4);
    std::atomic<int> leaders{0}, passed{0};
    std::vector<join_handle<void>> hs;
    for (int i = 0; i < 12; ++i) {  // three generations
        hs.push_back(
            rt.spawn([](barrier& b, std::atomic<int>& l, std::atomic<int>& p) -> task<void> {
                auto r = co_await b.wait();
                if (r.is_leader()) l.fetch_add(1);
                p.fetch_add(1);
            }(b, leaders, passed)));
    }
    for (auto& h : hs) h.join();
    EXPECT_EQ(leaders.load(), 3);
    EXPECT_EQ(passed.load(), 12);
    EXPECT_EQ(b.generation(), 3u);
    EXPECT_THROW(barrier(0), std::invalid_argument);
}

TEST(Barrier, AnAbortedWaiterLeavesTheCount) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        barrier b(2);
        auto a = spawn([](barrier& b) -> task<void> { (void)co_await b.wait(); }(b));
        co_await let_others_run();
        a.abort();
        co_await let_others_run();
        // Had the aborted waiter still counted, this wait would lead at once.
        auto c =
            spawn([](barrier& b) -> task<bool> { co_return (co_await b.wait()).is_leader(); }(b));
        co_await let_others_run();
        EXPECT_FALSE(c.is_finished());
        auto r = co_await b.wait();
        EXPECT_TRUE(r.is_leader());
        EXPECT_FALSE(co_await c);
    }());
}

// A one-party barrier's arrivals take no lock: from four threads at once (each running its own
// one-worker runtime, so they do run in parallel), every arrival leads and every one is counted
// (a load-then-store increment loses some).
TEST(Barrier, OnePartyArrivalsFromManyThreadsAreAllCounted) {
    constexpr int threads = 4, each = 2'000'000;
    barrier b(1);
    std::atomic<int> leaders{0};
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int k = 0; k < threads; ++k) {
        ts.emplace_back([&] {
            runtime rt(conformance::fresh(1));
            ready.fetch_add(1);
            while (ready.load() < threads) std::this_thread::yield();  // start together
            rt.block_on([](barrier& b, std::atomic<int>& leaders) -> task<void> {
                int mine = 0;
                for (int i = 0; i < each; ++i) mine += (co_await b.wait()).is_leader();
                leaders.fetch_add(mine, std::memory_order_relaxed);
            }(b, leaders));
        });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(leaders.load(), threads * each);
    EXPECT_EQ(b.generation(), std::size_t{threads} * each);
}

TEST(Barrier, OnePartyLeadsEveryGenerationAtOnce) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        barrier b(1);
        for (int i = 0; i < 3; ++i) EXPECT_TRUE((co_await b.wait()).is_leader());
        EXPECT_EQ(b.generation(), 3u);
        {
            auto unawaited = b.wait();
        }  // made and dropped: counts nowhere
        EXPECT_EQ(b.generation(), 3u);
        barrier two(2);
        {
            auto unawaited = two.wait();
        }
        auto a =
            spawn([](barrier& b) -> task<bool> { co_return (co_await b.wait()).is_leader(); }(two));
        co_await let_others_run();
        EXPECT_FALSE(a.is_finished());  // the dropped awaiter did not count as an arrival
        EXPECT_TRUE((co_await two.wait()).is_leader());
        EXPECT_FALSE(co_await a);
    }());
}

TEST(OnceCell, InitializerRunsOnceForConcurrentCallers) {
    runtime rt(conformance::fresh(4));
    once_cell<std::string> cell;
    std::atomic<int> calls{0};
    std::vector<join_handle<const std::string*>> hs;
    for (int i = 0; i < 32; ++i) {
        hs.push_back(rt.spawn(
            [](once_cell<std::string>& cell, std::atomic<int>& calls) -> task<const std::string*> {
                co_return co_await cell.get_or_init([&calls]() -> task<std::string> {
                    calls.fetch_add(1);
                    co_await sleep(2ms);  // an asynchronous initializer
                    co_return std::string("ready");
                });
            }(cell, calls)));
    }
    const std::string* first = hs[0].join();
    for (std::size_t i = 1; i < hs.size(); ++i) EXPECT_EQ(hs[i].join(), first);
    EXPECT_EQ(*first, "ready");
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(cell.initializations(), 1u);
}

TEST(OnceCell, AThrowingInitializerLeavesTheCellEmpty) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        once_cell<int> cell;
        bool threw = false;
        try {
            (void)co_await cell.get_or_init([]() -> int { throw std::runtime_error("no"); });
        } catch (const std::runtime_error&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        EXPECT_EQ(cell.get(), nullptr);
        const int* v = co_await cell.get_or_init([] { return 7; });
        EXPECT_EQ(*v, 7);
        EXPECT_FALSE(cell.set(8));
    }());
}

TEST(OnceCell, ExactlyOneOfConcurrentSetsWins) {
    // set() takes no lock: threads racing to set the same cell must still agree on one value,
    // and every reader that sees a value sees all of it.
    for (int round = 0; round < 200; ++round) {
        once_cell<std::vector<int>> cell;
        std::atomic<int> won{0};
        std::vector<std::thread> ts;
        for (int i = 0; i < 4; ++i) {
            ts.emplace_back([&, i] {
                if (cell.set(std::vector<int>(64, i))) won.fetch_add(1);
                const std::vector<int>* v = cell.get();
                if (v) {
                    for (int x : *v) ASSERT_EQ(x, (*v)[0]);
                }
            });
        }
        for (auto& t : ts) t.join();
        ASSERT_EQ(won.load(), 1);
        ASSERT_EQ(cell.initializations(), 1u);
        ASSERT_EQ(cell.get()->size(), 64u);
    }
}

TEST(OnceCell, SetLosesToAnInitializerInProgressAndAThrowingMoveLeavesItEmpty) {
    runtime rt(conformance::fresh(2));
    rt.block_on([]() -> task<void> {
        once_cell<int> cell;
        notify started, go;
        // An asynchronous initializer holds the cell: set() must not slip in meanwhile.
        auto h = spawn([](once_cell<int>& c, notify& s, notify& g) -> task<int> {
            co_return *co_await c.get_or_init([&s, &g]() -> task<int> {
                s.notify_one();
                co_await g.notified();
                co_return 1;
            });
        }(cell, started, go));
        co_await started.notified();
        EXPECT_FALSE(cell.set(2)) << "set() won against an initializer in progress";
        go.notify_one();
        EXPECT_EQ(co_await h, 1);
        EXPECT_FALSE(cell.set(3));
        EXPECT_EQ(*cell.get(), 1);
    }());
    struct throws_on_move {
        throws_on_move() = default;
        throws_on_move(throws_on_move&&) { throw std::runtime_error("move"); }
    };
    once_cell<throws_on_move> t;
    EXPECT_THROW((void)t.set(throws_on_move{}), std::runtime_error);
    EXPECT_EQ(t.get(), nullptr);
    EXPECT_EQ(t.initializations(), 0u);
}

TEST(CancellationToken, WakesWaitersAndChildrenFollowTheirParent) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        cancellation_token root;
        cancellation_token child = root.child_token();
        cancellation_token grandchild = child.child_token();
        cancellation_token lone = root.child_token();
        lone.cancel();
        EXPECT_FALSE(root.is_cancelled());  // a child does not cancel its parent
        std::atomic<int> woken{0};
        auto waiter = [](cancellation_token t, std::atomic<int>& w) -> task<void> {
            co_await t.cancelled();
            w.fetch_add(1);
        };
        auto h1 = spawn(waiter(root, woken));
        auto h2 = spawn(waiter(grandchild, woken));
        co_await let_others_run();
        EXPECT_EQ(woken.load(), 0);
        root.cancel();
        co_await h1;
        co_await h2;
        EXPECT_EQ(woken.load(), 2);
        EXPECT_TRUE(grandchild.is_cancelled());
        co_await root.cancelled();  // already cancelled: at once
        EXPECT_TRUE(root.child_token().is_cancelled());
    }());
}

}  // namespace
}  // namespace blitz
