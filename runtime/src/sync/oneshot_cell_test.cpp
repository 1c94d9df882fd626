// SPDX-License-Identifier: MIT
// oneshot_cell (X6): the oneshot whose state lives in the receiving object. Value or closed
// exactly once, and every value delivered, handed back or destroyed once, also
// when the cell goes first (an aborted receiver) or the sender moves between threads.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "blitz/blitz.hpp"
#include "blitz_testing/counted_payload.hpp"
#include "blitz_testing/suite.hpp"

namespace blitz {
namespace {

using payload = workloads::counted_payload;

TEST(OneshotCell, ValueThenEmptyInPlace) {
    oneshot_cell<std::string> cell;
    oneshot_cell<std::string>::try_status st;
    EXPECT_FALSE(cell.try_recv(&st));
    EXPECT_EQ(st, oneshot_cell<std::string>::try_status::empty);
    auto tx = cell.make_sender();
    EXPECT_FALSE(tx.is_closed());
    EXPECT_TRUE(std::move(tx).send("hi").sent());
    EXPECT_TRUE(tx.is_closed());  // spent
    EXPECT_EQ(cell.try_recv(&st), std::optional<std::string>("hi"));
    EXPECT_FALSE(cell.try_recv(&st));
    EXPECT_EQ(st, oneshot_cell<std::string>::try_status::closed);  // taken once, then the end
}

TEST(OneshotCell, MisuseIsAClearError) {
    oneshot_cell<int> cell;
    auto tx = cell.make_sender();
    EXPECT_THROW((void)cell.make_sender(), std::logic_error);
    EXPECT_TRUE(std::move(tx).send(1).sent());
    EXPECT_THROW((void)std::move(tx).send(2), std::logic_error);
    auto moved_from = cell.try_recv();
    EXPECT_EQ(moved_from, 1);
}

TEST(OneshotCell, DroppedSenderClosesTheCell) {
    oneshot_cell<int> cell;
    {
        auto gone = cell.make_sender();
    }
    oneshot_cell<int>::try_status st;
    EXPECT_FALSE(cell.try_recv(&st));
    EXPECT_EQ(st, oneshot_cell<int>::try_status::closed);
}

TEST(OneshotCell, CellGoneFirstHandsTheValueBack) {
    std::optional<oneshot_cell<std::unique_ptr<int>>::sender> tx;
    {
        oneshot_cell<std::unique_ptr<int>> cell;
        tx.emplace(cell.make_sender());
    }
    EXPECT_TRUE(tx->is_closed());
    auto r = std::move(*tx).send(std::make_unique<int>(5));
    EXPECT_TRUE(r.closed());
    EXPECT_EQ(*r.take_back(), 5);
}

TEST(OneshotCell, SentAndNotTakenIsDestroyedWithTheCell) {
    const long before = payload::live.load();
    {
        oneshot_cell<payload> cell;
        EXPECT_TRUE(cell.make_sender().send(payload(3)).sent());
        EXPECT_EQ(payload::live.load(), before + 1);
    }
    EXPECT_EQ(payload::live.load(), before);
}

TEST(OneshotCell, MovedSenderIsTheOneTheCellCloses) {
    std::optional<oneshot_cell<int>::sender> far;
    {
        oneshot_cell<int> cell;
        auto tx = cell.make_sender();
        auto tx2 = std::move(tx);
        far.emplace(std::move(tx2));
        EXPECT_TRUE(tx.is_closed());
        EXPECT_FALSE(far->is_closed());
    }  // the cell closes the sender where it is now
    EXPECT_TRUE(far->is_closed());
    EXPECT_TRUE(std::move(*far).send(4).closed());
}

TEST(OneshotCell, MoveAssignmentClosesTheOldSender) {
    oneshot_cell<int> a, b;
    auto ta = a.make_sender();
    auto tb = b.make_sender();
    ta = std::move(tb);  // a's sender is dropped: a is closed
    oneshot_cell<int>::try_status st;
    EXPECT_FALSE(a.try_recv(&st));
    EXPECT_EQ(st, oneshot_cell<int>::try_status::closed);
    EXPECT_TRUE(std::move(ta).send(9).sent());
    EXPECT_EQ(b.try_recv(), 9);
}

TEST(OneshotCell, AwaitedInATaskFromAnotherThread) {
    runtime rt(conformance::fresh(2));
    for (int round = 0; round < 200; ++round) {
        auto h = rt.spawn([](int round) -> task<int> {
            oneshot_cell<int> cell;
            std::thread other(
                [tx = cell.make_sender(), round]() mutable { (void)std::move(tx).send(round); });
            auto v = co_await cell;
            other.join();
            co_return v ? *v : -1;
        }(round));
        EXPECT_EQ(h.join(), round);
    }
}

TEST(OneshotCell, SenderDroppedElsewhereWakesTheWaitWithClosed) {
    runtime rt(conformance::fresh(2));
    auto h = rt.spawn([]() -> task<bool> {
        oneshot_cell<int> cell;
        std::thread other([tx = cell.make_sender()]() mutable { auto gone = std::move(tx); });
        auto v = co_await cell;
        other.join();
        co_return v.has_value();
    }());
    EXPECT_FALSE(h.join());
}

// The receiving task is aborted while its sender is live on a plain thread: the frame (and the
// cell) go, the send that follows gets its value back, and nothing leaks.
TEST(OneshotCell, AbortedReceiverHandsTheLaterSendBack) {
    const long before = payload::live.load();
    runtime rt(conformance::fresh(2));
    std::optional<oneshot_cell<payload>::sender> tx;
    std::atomic<bool> waiting{false};
    auto h = rt.spawn([](std::optional<oneshot_cell<payload>::sender>& tx,
                         std::atomic<bool>& waiting) -> task<int> {
        oneshot_cell<payload> cell;
        tx.emplace(cell.make_sender());
        waiting.store(true);
        auto v = co_await cell;
        co_return v ? static_cast<int>(v->id) : -1;
    }(tx, waiting));
    while (!waiting.load()) std::this_thread::yield();
    h.abort();
    EXPECT_THROW(h.join(), task_cancelled);
    auto r = std::move(*tx).send(payload(8));
    ASSERT_TRUE(r.closed());
    EXPECT_EQ(r.take_back().id, 8u);
    rt.shutdown();
    EXPECT_EQ(payload::live.load(), before);
}

// A value whose move throws: the send that cannot move it in consumes the sender, so the
// receiving end sees the channel closed instead of waiting for good (both oneshot kinds).
struct throws_on_move {
    int v = 0;
    explicit throws_on_move(int x) : v(x) {}
    throws_on_move(throws_on_move&& o) : v(o.v) {
        if (v < 0) throw std::runtime_error("move");
    }
};

TEST(OneshotCell, ASendWhoseMoveThrowsClosesTheCell) {
    oneshot_cell<throws_on_move> cell;
    auto tx = cell.make_sender();
    EXPECT_THROW((void)std::move(tx).send(throws_on_move(-1)), std::runtime_error);
    EXPECT_TRUE(tx.is_closed());
    oneshot_cell<throws_on_move>::try_status st;
    EXPECT_FALSE(cell.try_recv(&st));
    EXPECT_EQ(st, oneshot_cell<throws_on_move>::try_status::closed);
}

TEST(Oneshot, ASendWhoseMoveThrowsClosesTheChannel) {
    auto [tx, rx] = oneshot<throws_on_move>();
    EXPECT_THROW((void)std::move(tx).send(throws_on_move(-1)), std::runtime_error);
    oneshot_receiver<throws_on_move>::try_status st;
    EXPECT_FALSE(rx.try_recv(&st));
    EXPECT_EQ(st, oneshot_receiver<throws_on_move>::try_status::closed);
}

}  // namespace
}  // namespace blitz
