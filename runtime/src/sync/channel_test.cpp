// SPDX-License-Identifier: MIT
// The bounded MPMC channel (X5): FIFO, capacity, waiting sends that deliver, close and drain,
// values handed back when receivers are gone, cancellation while waiting.

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/suite.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz {
namespace {

using workloads::let_others_run;

TEST(Channel, FifoWithinCapacityAndTryForms) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<int>(3);
        EXPECT_TRUE(tx.try_send(1).sent());
        EXPECT_TRUE((co_await tx.send(2)).sent());
        EXPECT_TRUE(tx.try_send(3).sent());
        auto full = tx.try_send(4);
        EXPECT_TRUE(full.full());
        EXPECT_EQ(full.take_back(), 4);
        EXPECT_EQ(rx.len(), 3u);
        EXPECT_EQ(*rx.try_recv(), 1);
        EXPECT_EQ(*(co_await rx.recv()), 2);
        EXPECT_EQ(*(co_await rx.recv()), 3);
        receiver<int>::try_status st;
        EXPECT_FALSE(rx.try_recv(&st).has_value());
        EXPECT_EQ(st, receiver<int>::try_status::empty);
    }());
    EXPECT_THROW((void)channel<int>(0), std::invalid_argument);
    // The ring rounds up to a power of two; a capacity whose ring cannot be addressed is refused.
    EXPECT_THROW((void)channel<int>(std::numeric_limits<std::size_t>::max() / 2),
                 std::invalid_argument);
}

// Positions are 32-bit: a ring of 4 slots (capacity 3) numbered from 6 before the wrap-around.
// try_send's tickets, the awaiting sends' tickets and the readers' counts all cross 2^32; the
// values keep their order, and the ones left in the ring are destroyed with it, once.
struct counted {
    static inline int alive = 0;
    int v;
    explicit counted(int x) : v(x) { ++alive; }
    counted(counted&& o) noexcept : v(o.v) { ++alive; }
    ~counted() { --alive; }
};

TEST(Channel, PositionsWrapAroundTheirThirtyTwoBits) {
    {
        detail::chan_state<counted> s(3, 0xFFFFFFFAu);
        int sent = 0, got = 0;
        for (int round = 0; round < 20; ++round) {
            // Fill: by ticket (try_send's way) and by permit then ticket (an awaiting send's).
            while (true) {
                std::uint32_t pos;
                if (round % 2 == 0) {
                    if (!s.free_slots().try_acquire_ticket(pos)) break;
                } else {
                    auto p = s.free_slots().try_acquire(1);
                    if (!p) break;
                    p->forget();
                    pos = s.free_slots().take_ticket();
                }
                s.push(counted(sent++), pos);
                s.ready_values().release(1);
            }
            EXPECT_EQ(s.len(), 3u);
            // Drain all but round % 3 of them.
            while (static_cast<int>(s.len()) > round % 3) {
                auto p = s.ready_values().try_acquire(1);
                ASSERT_TRUE(p.has_value());
                p->forget();
                EXPECT_EQ(s.pop().v, got++);
                s.free_slots().release(1);
            }
        }
        EXPECT_LT(s.free_slots().next_ticket(), 0xFFFFFFFAu);  // the tickets wrapped
        EXPECT_EQ(counted::alive, static_cast<int>(s.len()));
    }
    EXPECT_EQ(counted::alive, 0);  // what was left went with the ring
}

// try_send from four plain threads at once into a small channel, one thread draining with
// try_recv: each value arrives once and each sender's in its order, so no two senders were
// ever given the same slot (mutant channel-ticket-apart: a position read apart from the take).
TEST(Channel, ConcurrentTrySendsTakeDistinctPositions) {
    constexpr int senders = 4, each = 100'000;
    auto [tx, rx] = channel<int>(8);
    std::vector<std::thread> ts;
    for (int k = 0; k < senders; ++k) {
        ts.emplace_back([&tx = tx, k] {
            sender<int> mine = tx;
            for (int i = 0; i < each; ++i) {
                while (!mine.try_send(k * each + i).sent()) std::this_thread::yield();
            }
        });
    }
    std::vector<int> next(senders, 0);
    int got = 0;
    bool in_order = true;
    while (got < senders * each) {
        if (auto v = rx.try_recv()) {
            const int k = *v / each;
            in_order = in_order && *v % each == next[static_cast<std::size_t>(k)];
            ++next[static_cast<std::size_t>(k)];
            ++got;
        } else {
            std::this_thread::yield();
        }
    }
    for (auto& t : ts) t.join();
    EXPECT_TRUE(in_order);
    EXPECT_FALSE(rx.try_recv().has_value());
}

// A capacity that is not a power of two (the ring has 8 slots for 5) stays at its capacity over
// many laps, in order, whatever the fill level when a lap wraps.
TEST(Channel, ACapacityBelowTheRingSizeHoldsOverManyLaps) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<int>(5);
        EXPECT_EQ(tx.capacity(), 5u);
        int sent = 0, got = 0;
        for (int round = 0; round < 200; ++round) {
            // Fill to between 1 and 5 values, then leave 0 or 1 of them behind.
            const int fill = 1 + round % 5;
            while (sent - got < fill) EXPECT_TRUE(tx.try_send(sent++).sent());
            if (fill == 5) EXPECT_TRUE(tx.try_send(-1).full());
            while (sent - got > round % 2) EXPECT_EQ(*(co_await rx.recv()), got++);
        }
        while (auto v = rx.try_recv()) EXPECT_EQ(*v, got++);
        EXPECT_EQ(got, sent);
    }());
}

TEST(Channel, AWaitingSendDeliversItsValue) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<std::string>(1);
        EXPECT_TRUE(tx.try_send("a").sent());
        auto h = spawn([](sender<std::string> tx) -> task<bool> {
            co_return (co_await tx.send("b")).sent();  // waits: the channel is full
        }(tx));
        co_await let_others_run();
        EXPECT_FALSE(h.is_finished());
        EXPECT_EQ(*(co_await rx.recv()), "a");
        EXPECT_TRUE(co_await h);
        EXPECT_EQ(*(co_await rx.recv()), "b");  // the waiting send's value is there
    }());
}

TEST(Channel, ClosingDrainsThenEnds) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<int>(4);
        auto waiting = spawn([](receiver<int> rx) -> task<std::vector<int>> {
            std::vector<int> got;
            while (auto v = co_await rx.recv()) got.push_back(*v);
            co_return got;
        }(rx));
        EXPECT_TRUE(tx.try_send(1).sent());
        EXPECT_TRUE(tx.try_send(2).sent());
        {
            auto moved = std::move(tx);  // the last sender goes at the end of this scope
        }
        const auto got = co_await waiting;
        EXPECT_EQ(got, (std::vector<int>{1, 2}));
        receiver<int>::try_status st;
        EXPECT_FALSE(rx.try_recv(&st).has_value());
        EXPECT_EQ(st, receiver<int>::try_status::closed);
        EXPECT_TRUE(rx.is_closed());
    }());
}

TEST(Channel, SendsWithoutReceiversHandTheValueBack) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<std::unique_ptr<int>>(1);
        EXPECT_TRUE(tx.try_send(std::make_unique<int>(1)).sent());
        auto blocked = spawn([](sender<std::unique_ptr<int>> tx) -> task<int> {
            auto r = co_await tx.send(std::make_unique<int>(2));
            co_return r.closed() ? *r.take_back() : -1;
        }(tx));
        co_await let_others_run();
        {
            auto gone = std::move(rx);
        }
        EXPECT_EQ(co_await blocked, 2);  // the waiting send got its value back
        auto late = tx.try_send(std::make_unique<int>(3));
        EXPECT_TRUE(late.closed());
        EXPECT_EQ(*late.take_back(), 3);
        EXPECT_TRUE(tx.is_closed());
        auto r = co_await tx.send(std::make_unique<int>(4));
        EXPECT_TRUE(r.closed());
    }());
}

TEST(Channel, AbortedWaitersLeaveNothingBehind) {
    runtime rt(conformance::fresh(1));
    rt.block_on([]() -> task<void> {
        auto [tx, rx] = channel<int>(1);
        EXPECT_TRUE(tx.try_send(0).sent());
        auto s1 = spawn([](sender<int> tx) -> task<void> { (void)co_await tx.send(1); }(tx));
        auto s2 = spawn([](sender<int> tx) -> task<void> { (void)co_await tx.send(2); }(tx));
        co_await let_others_run();
        s1.abort();  // its value never enters the channel; s2 keeps its place
        co_await let_others_run();
        EXPECT_EQ(*(co_await rx.recv()), 0);
        EXPECT_EQ(*(co_await rx.recv()), 2);
        co_await s2;
        auto r1 = spawn([](receiver<int> rx) -> task<void> { (void)co_await rx.recv(); }(rx));
        co_await let_others_run();
        r1.abort();
        co_await let_others_run();
        EXPECT_TRUE(tx.try_send(5).sent());
        EXPECT_EQ(*rx.try_recv(), 5);  // the aborted receiver took nothing
    }());
}

TEST(Channel, UnreceivedValuesAreDestroyedWithTheChannel) {
    auto counter = std::make_shared<int>(0);
    {
        auto [tx, rx] = channel<std::shared_ptr<int>>(4);
        EXPECT_TRUE(tx.try_send(counter).sent());
        EXPECT_TRUE(tx.try_send(counter).sent());
        EXPECT_EQ(counter.use_count(), 3);
    }
    EXPECT_EQ(counter.use_count(), 1);
}

}  // namespace
}  // namespace blitz

namespace blitz {
namespace {

// The runtime core change behind channel closing: a completed task's frame (its by-value
// parameters included) is destroyed at completion, while its join handle still holds the
// result.
TEST(TaskFrame, ParametersGoAtCompletionAndTheResultStays) {
    runtime rt(conformance::fresh(1));
    auto token = std::make_shared<int>(7);
    auto h = rt.spawn([](std::shared_ptr<int> p) -> task<std::string> {
        co_return "value " + std::to_string(*p);
    }(token));
    while (!h.is_finished()) std::this_thread::yield();
    // Wait for the worker to finish the completion step (frame destruction comes before the
    // completed state is published, so this holds as soon as is_finished() does).
    EXPECT_EQ(token.use_count(), 1);
    EXPECT_EQ(h.join(), "value 7");
}

// A parameter whose copy into the frame throws (armed) or succeeds.
struct copy_may_throw {
    bool armed = false;
    copy_may_throw() = default;
    explicit copy_may_throw(bool a) : armed(a) {}
    copy_may_throw(const copy_may_throw& o) : armed(o.armed) {
        if (armed) throw std::runtime_error("copy_may_throw");
    }
};
task<int> takes_a_copy(copy_may_throw) { co_return 1; }

// The frame is allocated before its parameters are copied into it and its promise is built:
// when a copy throws, the frame is freed with its header never claimed, and the header must not
// stay "fresh" for a later frame that lands at the same address.
TEST(TaskFrame, AFrameWhoseParameterCopyThrowsLeavesNoFreshHeader) {
    EXPECT_THROW((void)takes_a_copy(copy_may_throw(true)), std::runtime_error);
    EXPECT_EQ(detail::tl_fresh_header, nullptr);
    runtime rt(conformance::fresh(1));
    EXPECT_EQ(rt.spawn(takes_a_copy(copy_may_throw(false))).join(), 1);
}

}  // namespace
}  // namespace blitz
