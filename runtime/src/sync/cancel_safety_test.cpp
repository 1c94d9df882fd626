// SPDX-License-Identifier: MIT
// Issue 13: nothing lost under cancellation. Each test names the defect it pins down; each
// failed on the tree before the fix (select spawned its branches and discarded a loser's value;
// a closed channel's queued receiver got the end while a granted value could still come back;
// timeout spawned eagerly and started its deadline at the call).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/suite.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

// Occupies its worker (says so through `on`) until `go`: with one worker, work woken meanwhile
// waits behind it, so a test can arrange grants, closes and aborts before anything runs.
task<void> hold_worker(std::atomic<bool>& on, std::atomic<bool>& go) {
    on.store(true);
    while (!go.load()) std::this_thread::yield();
    co_return;
}

// Defect 1: with both channels holding a value, a select over the two receives takes exactly
// one of them; the other stays in its channel (sent == delivered + left), every round.
TEST(CancelSafety, SelectOverTwoReadyReceivesTakesExactlyOneValue) {
    for (unsigned workers : {1u, 2u}) {
        runtime rt(conformance::fresh(workers));
        const auto lost = rt.block_on([]() -> task<long> {
            long lost = 0;
            for (int round = 0; round < 2000; ++round) {
                auto [tx1, rx1] = channel<int>(1);
                auto [tx2, rx2] = channel<int>(1);
                (void)tx1.try_send(1);
                (void)tx2.try_send(2);
                auto r = co_await select(rx1.recv(), rx2.recv());
                const long delivered = (r.index() == 0 ? std::get<0>(r) : std::get<1>(r)) ? 1 : 0;
                const long left = static_cast<long>(rx1.len() + rx2.len());
                lost += 2 - delivered - left;
            }
            co_return lost;
        }());
        EXPECT_EQ(lost, 0) << workers << " workers";
    }
}

// Defect 1, with the branches waiting first: the values arrive while the select is suspended
// on both receives, so both receivers may be granted before the task runs; the loser's grant
// goes back to its channel.
TEST(CancelSafety, SelectGrantedOnBothBranchesGivesTheLoserBack) {
    runtime rt(conformance::fresh(1));
    for (int round = 0; round < 200; ++round) {
        auto [tx1, rx1] = channel<int>(1);
        auto [tx2, rx2] = channel<int>(1);
        std::atomic<bool> waiting{false}, release{false};
        auto h =
            rt.spawn([](receiver<int>& a, receiver<int>& b, std::atomic<bool>& w) -> task<int> {
                w.store(true);
                auto r = co_await select(a.recv(), b.recv());
                co_return r.index() == 0 ? *std::get<0>(r) : *std::get<1>(r);
            }(rx1, rx2, waiting));
        // The one worker runs the select (it suspends on both), then the blocker, which holds
        // the worker while both values are granted.
        std::atomic<bool> on{false};
        auto blocker = rt.spawn(hold_worker(on, release));
        while (!waiting.load()) std::this_thread::yield();
        std::this_thread::sleep_for(1ms);  // ordering only: the select has suspended by now
        (void)tx1.try_send(10);
        (void)tx2.try_send(20);
        release.store(true);
        const int got = h.join();
        blocker.join();
        EXPECT_EQ(got, 10);  // the earliest ready argument wins
        EXPECT_EQ(rx1.len() + rx2.len(), 1u) << "round " << round;
        EXPECT_EQ(rx2.try_recv().value_or(-1), 20);
    }
}

// Defect 2 (deterministic path): receiver A is granted the last value, the last sender leaves
// (its queued receiver B must not be told "closed"), then A is aborted: its value goes to B.
TEST(CancelSafety, ValueGrantedToAnAbortedReceiverGoesToTheNextOne) {
    runtime rt(conformance::fresh(1));
    auto [tx, rx] = channel<int>(1);
    auto recv_one = [](receiver<int> rx) -> task<std::optional<int>> {
        co_return co_await rx.recv();
    };
    std::atomic<bool> blocking{false}, release{false};
    auto a = rt.spawn(recv_one(rx));
    auto b = rt.spawn(recv_one(rx));
    auto blocker = rt.spawn(hold_worker(blocking, release));
    // One worker, injected in order: A and B have each suspended on recv when the blocker runs.
    while (!blocking.load()) std::this_thread::yield();
    ASSERT_TRUE(tx.try_send(42).sent());  // granted to A, which cannot run yet
    {
        auto gone = std::move(tx);
    }  // the last sender leaves
    a.abort();
    release.store(true);
    blocker.join();
    EXPECT_THROW(a.join(), task_cancelled);
    EXPECT_EQ(b.join(), std::optional<int>(42));
}

// Defect 2 for try_recv: while a value granted to a waiting receiver can still come back, a
// closed channel reports empty, not closed; once the value is back it is received.
TEST(CancelSafety, TryRecvSaysClosedOnlyWhenNothingCanComeBack) {
    runtime rt(conformance::fresh(1));
    auto [tx, rx] = channel<int>(1);
    std::atomic<bool> blocking{false}, release{false};
    auto a = rt.spawn(
        [](receiver<int> rx) -> task<std::optional<int>> { co_return co_await rx.recv(); }(rx));
    auto blocker = rt.spawn(hold_worker(blocking, release));
    while (!blocking.load()) std::this_thread::yield();
    ASSERT_TRUE(tx.try_send(7).sent());
    {
        auto gone = std::move(tx);
    }
    receiver<int>::try_status st{};
    EXPECT_FALSE(rx.try_recv(&st).has_value());
    EXPECT_EQ(st, receiver<int>::try_status::empty);  // A's grant may still come back
    a.abort();
    release.store(true);
    blocker.join();
    EXPECT_THROW(a.join(), task_cancelled);
    EXPECT_EQ(rx.try_recv(&st), std::optional<int>(7));
    EXPECT_FALSE(rx.try_recv(&st).has_value());
    EXPECT_EQ(st, receiver<int>::try_status::closed);
}

blitz::task<int> answer_after(std::chrono::milliseconds d) {
    co_await sleep(d);
    co_return 42;
}

// Defect 3: timeout is lazy. From a plain thread it is awaited by block_on (nothing is spawned
// at the call), and the deadline starts at the first await, not when timeout() is called.
TEST(CancelSafety, TimeoutIsLazyAndItsDeadlineStartsAtTheFirstAwait) {
    runtime rt(conformance::fresh(2));
    auto r = rt.block_on(timeout(1h, answer_after(1ms)));
    EXPECT_EQ(r.value(), 42);

    config c = conformance::fresh(1);
    c.start_paused = true;
    runtime paused(c);
    std::atomic<bool> made{false};
    auto h = paused.spawn([](std::atomic<bool>& made) -> task<bool> {
        auto op = timeout(10ms, answer_after(5ms));  // nothing runs, no deadline yet
        made.store(true);
        co_await sleep(20ms);  // longer than the timeout itself
        auto res = co_await std::move(op);
        co_return res.timed_out();
    }(made));
    while (!made.load()) std::this_thread::yield();
    for (int i = 0; i < 40 && !h.is_finished(); ++i) {
        std::this_thread::sleep_for(1ms);
        paused.advance(1ms);
    }
    EXPECT_FALSE(h.join());
}

// Defect 3 cont.: a timed-out inline task is destroyed before timeout returns (nothing keeps
// running in the background), and a join handle given to timeout keeps its task.
TEST(CancelSafety, TimeoutDestroysItsInlineTaskAndLeavesAJoinHandlesTaskRunning) {
    runtime rt(conformance::fresh(2));
    auto res = rt.block_on([]() -> task<int> {
        int destroyed = 0;
        struct mark {
            int* n;
            ~mark() { ++*n; }
        };
        auto body = [](int* n) -> task<int> {
            mark m{n};
            co_await sleep(1h);
            co_return 0;
        };
        auto t = co_await timeout(2ms, body(&destroyed));
        if (!t.timed_out() || destroyed != 1) co_return -1;
        auto h = spawn(answer_after(20ms));
        auto first = co_await timeout(1ms, h);
        if (!first.timed_out() || h.is_finished()) co_return -2;
        co_return co_await h;
    }());
    EXPECT_EQ(res, 42);
}

// Defect 4: 256 nested shields used to carry the 8-bit depth into the reference count in release
// builds. The 256th now throws in every build, the 255 below it still defer an abort, and the
// task is cancelled once they are gone.
TEST(CancelSafety, ShieldDepthPastTheLimitThrowsAndLeavesTheTaskIntact) {
    runtime rt(conformance::fresh(1));
    std::atomic<int> stage{0};
    auto h = rt.spawn([](std::atomic<int>& stage) -> task<void> {
        std::vector<std::unique_ptr<cancel_shield>> shields;
        for (int i = 0; i < 255; ++i) shields.push_back(std::make_unique<cancel_shield>());
        bool threw = false;
        try {
            cancel_shield one_too_many;
        } catch (const std::length_error&) {
            threw = true;
        }
        stage.store(threw ? 1 : -1);
        while (stage.load() == 1) co_await yield_now();  // aborted meanwhile: shielded
        shields.clear();
        stage.store(3);
        co_await yield_now();  // the abort takes effect here
        stage.store(4);
    }(stage));
    while (stage.load() == 0) std::this_thread::yield();
    ASSERT_EQ(stage.load(), 1);
    h.abort();
    std::this_thread::sleep_for(2ms);  // ordering only: the shields hold off the abort
    stage.store(2);
    EXPECT_THROW(h.join(), task_cancelled);
    EXPECT_EQ(stage.load(), 3);
}

// Defect 5: a destructor that spawns while the runtime shuts down gets a cancelled handle
// instead of std::terminate.
TEST(CancelSafety, SpawnFromADestructorDuringShutdownGivesACancelledHandle) {
    std::atomic<int> cancelled_handles{0}, started{0};
    {
        runtime rt(conformance::fresh(2));
        struct spawns_on_exit {
            std::atomic<int>* n;
            ~spawns_on_exit() {
                auto h = spawn([]() -> task<int> { co_return 1; }());
                if (h.is_cancelled()) n->fetch_add(1);
            }
        };
        for (int i = 0; i < 4; ++i) {
            rt.spawn([](std::atomic<int>* n, std::atomic<int>* started) -> task<void> {
                  spawns_on_exit guard{n};
                  started->fetch_add(1);
                  co_await sleep(std::chrono::hours(1));
              }(&cancelled_handles, &started))
                .detach();
        }
        // Every frame must hold its guard (a task never polled has no guard to destroy).
        while (started.load() < 4) std::this_thread::sleep_for(1ms);
    }  // shutdown destroys the four frames on this thread
    EXPECT_EQ(cancelled_handles.load(), 4);
}

// Defect 6: misuse of a spent or moved-from sender is an exception, not a null dereference.
TEST(CancelSafety, SpentAndMovedFromSendersThrow) {
    auto [otx, orx] = oneshot<int>();
    auto moved = std::move(otx);
    EXPECT_THROW((void)std::move(otx).send(1), std::logic_error);
    EXPECT_TRUE(std::move(moved).send(1).sent());
    EXPECT_THROW((void)std::move(moved).send(2), std::logic_error);  // a second send
    EXPECT_EQ(orx.try_recv(), std::optional<int>(1));
    auto orx2 = std::move(orx);
    EXPECT_THROW((void)orx.try_recv(), std::logic_error);

    auto [tx, rx] = channel<int>(1);
    auto tx2 = std::move(tx);
    EXPECT_THROW((void)tx.try_send(1), std::logic_error);
    EXPECT_THROW((void)tx.len(), std::logic_error);
    auto rx2 = std::move(rx);
    EXPECT_THROW((void)rx.try_recv(), std::logic_error);
    EXPECT_TRUE(tx2.try_send(3).sent());
    EXPECT_EQ(rx2.try_recv(), std::optional<int>(3));
}

// Defect 7: an exception ending a task whose handle is gone reaches on_unhandled_exception,
// once per task; one whose handle is still held does not (its owner gets it).
TEST(CancelSafety, ExceptionsOfDetachedTasksReachTheHandler) {
    std::atomic<int> reported{0};
    config c = conformance::fresh(2);
    c.on_unhandled_exception = [&](std::exception_ptr e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::runtime_error& x) {
            if (std::string(x.what()) == "lost") reported.fetch_add(1);
        }
    };
    runtime rt(c);
    auto fails = [](std::chrono::milliseconds d) -> task<void> {
        co_await sleep(d);
        throw std::runtime_error("lost");
    };
    rt.spawn(fails(1ms)).detach();
    {
        auto dropped = rt.spawn(fails(1ms));
    }
    auto kept = rt.spawn(fails(1ms));
    EXPECT_THROW(kept.join(), std::runtime_error);
    for (int i = 0; i < 5000 && reported.load() < 2; ++i) std::this_thread::sleep_for(1ms);
    rt.shutdown();
    EXPECT_EQ(reported.load(), 2);
}

}  // namespace
}  // namespace blitz
