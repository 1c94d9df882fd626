// SPDX-License-Identifier: MIT
// Lost tasks (issue 46, runtime::find_lost): a corpus of seeded leaks in the manner of Go's
// goroutine-leak tests, each run beside its leak-free twin in the same runtime. Every leak is
// reported (a deadlock marked as one) with the tasks its proof rests on; no twin ever is.
// Shapes blitz prevents by construction (a receive whose senders were all dropped wakes with
// the end of the channel) need no detector: ChannelClosedByLastSender shows it.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"

namespace {

using namespace std::chrono_literals;
using blitz::join_handle;
using blitz::lost_report;
using blitz::mutex;
using blitz::oneshot_receiver;
using blitz::receiver;
using blitz::sender;
using blitz::task;

blitz::config quiet() {
    blitz::config c;
    c.workers = 2;
    c.stall_threshold = 0ns;
    return c;
}

const blitz::lost_task* find(const lost_report& r, std::uint64_t id) {
    for (const auto& l : r.lost) {
        if (l.task.id == id) return &l;
    }
    return nullptr;
}

// Asks until every id in `leaks` is reported (counted tries, not time: a task reaches its wait
// within a few polls), then returns that report.
lost_report until_reported(blitz::runtime& rt, const std::vector<std::uint64_t>& leaks) {
    lost_report r;
    for (int i = 0; i < 2000; ++i) {
        r = rt.find_lost();
        if (std::all_of(leaks.begin(), leaks.end(),
                        [&](std::uint64_t id) { return find(r, id) != nullptr; }))
            return r;
        std::this_thread::yield();
    }
    ADD_FAILURE() << "not every seeded leak was reported:\n" << r.to_string();
    return r;
}

void expect_not_reported(const lost_report& r, std::uint64_t id, const char* twin) {
    EXPECT_EQ(find(r, id), nullptr) << twin << " was reported:\n" << r.to_string();
}

// ---- the tasks of the corpus ----

task<void> lt_join_received(oneshot_receiver<join_handle<void>> rx) {
    auto h = co_await std::move(rx);
    if (h) co_await *h;
}

task<void> lt_wait_signal(oneshot_receiver<int> go) { (void)co_await std::move(go); }

task<void> lt_sleep_forever() { co_await blitz::sleep_until(blitz::instant::max()); }

task<void> lt_sleep_hour() { co_await blitz::sleep(1h); }

task<void> lt_join(join_handle<void> h) { co_await h; }

task<void> lt_own_sender() {
    auto [tx, rx] = blitz::channel<int>(1);
    (void)co_await rx.recv();  // its only sender is right here
}

task<void> lt_recv(receiver<int> rx) { (void)co_await rx.recv(); }

task<void> lt_recv_holding(receiver<int> rx, sender<int> held) { (void)co_await rx.recv(); }

task<void> lt_recv_holding_heap(receiver<int> rx, std::shared_ptr<sender<int>> held) {
    (void)co_await rx.recv();
}

task<void> lt_recv_holding_then_sleep(receiver<int> rx, sender<int> held) {
    co_await blitz::sleep(1h);  // will wake: what it holds may still be sent on
    (void)co_await rx.recv();
}

task<void> lt_lock_then(mutex& first, mutex& second, oneshot_receiver<int> go) {
    auto g = co_await first.lock();
    (void)co_await std::move(go);
    auto g2 = co_await second.lock();
}

task<void> lt_lock_then_join(mutex& m, oneshot_receiver<join_handle<void>> rx) {
    auto g = co_await m.lock();
    auto h = co_await std::move(rx);
    if (h) co_await *h;
}

task<void> lt_lock(mutex& m) { auto g = co_await m.lock(); }

task<int> lt_select_own(bool with_timeout) {
    auto [tx1, rx1] = blitz::channel<int>(1);
    auto [tx2, rx2] = blitz::channel<int>(1);
    if (with_timeout) {
        auto r = co_await blitz::select(rx1.recv(), rx2.recv(), blitz::sleep(1h));
        co_return static_cast<int>(r.index());
    }
    auto r = co_await blitz::select(rx1.recv(), rx2.recv());
    co_return static_cast<int>(r.index());
}

task<int> lt_child_recv(receiver<int>& rx) {
    auto v = co_await rx.recv();
    co_return v.value_or(-1);
}

task<void> lt_parent_holding_sender() {
    auto [tx, rx] = blitz::channel<int>(1);
    (void)co_await lt_child_recv(rx);  // the sender is in this (the parent's) frame
}

// Hands a task its own join handle, or another's.
template <class T>
void hand(blitz::oneshot_sender<T>& tx, T v) {
    ASSERT_TRUE(std::move(tx).send(std::move(v)).sent());
}

TEST(LostTasks, JoinCyclesAndSelfJoin) {
    blitz::runtime rt(quiet());
    // Leak 1: a task joining itself.
    auto [s_tx, s_rx] = blitz::oneshot<join_handle<void>>();
    auto self = rt.spawn(lt_join_received(std::move(s_rx)));
    const std::uint64_t self_id = self.id();
    hand(s_tx, std::move(self));
    // Leak 2: two tasks joining each other.
    auto [a_tx, a_rx] = blitz::oneshot<join_handle<void>>();
    auto [b_tx, b_rx] = blitz::oneshot<join_handle<void>>();
    auto a = rt.spawn(lt_join_received(std::move(a_rx)));
    auto b = rt.spawn(lt_join_received(std::move(b_rx)));
    const std::uint64_t a_id = a.id(), b_id = b.id();
    hand(a_tx, std::move(b));
    hand(b_tx, std::move(a));
    // Leak 3: a cycle of three.
    auto [x_tx, x_rx] = blitz::oneshot<join_handle<void>>();
    auto [y_tx, y_rx] = blitz::oneshot<join_handle<void>>();
    auto [z_tx, z_rx] = blitz::oneshot<join_handle<void>>();
    auto x = rt.spawn(lt_join_received(std::move(x_rx)));
    auto y = rt.spawn(lt_join_received(std::move(y_rx)));
    auto z = rt.spawn(lt_join_received(std::move(z_rx)));
    const std::uint64_t x_id = x.id(), y_id = y.id(), z_id = z.id();
    hand(x_tx, std::move(y));
    hand(y_tx, std::move(z));
    hand(z_tx, std::move(x));
    // Twin: a chain of joins that ends in a task the test will let finish.
    auto [go_tx, go_rx] = blitz::oneshot<int>();
    auto end = rt.spawn(lt_wait_signal(std::move(go_rx)));
    auto [m_tx, m_rx] = blitz::oneshot<join_handle<void>>();
    auto middle = rt.spawn(lt_join_received(std::move(m_rx)));
    hand(m_tx, std::move(end));
    auto head = rt.spawn(lt_join(std::move(middle)));

    const lost_report r = until_reported(rt, {self_id, a_id, b_id, x_id, y_id, z_id});
    if (::testing::Test::HasFailure()) return;  // the report lacks a seeded leak
    for (const std::uint64_t id : {self_id, a_id, b_id, x_id, y_id, z_id}) {
        const auto* l = find(r, id);
        ASSERT_NE(l, nullptr);
        EXPECT_TRUE(l->deadlocked) << r.to_string();
        EXPECT_EQ(l->task.waiting_on.kind, "join");
    }
    EXPECT_EQ(find(r, self_id)->waits_for, std::vector<std::uint64_t>{self_id});
    EXPECT_EQ(find(r, a_id)->waits_for, std::vector<std::uint64_t>{b_id});
    expect_not_reported(r, head.id(), "the head of a chain that will end");
    ASSERT_TRUE(std::move(go_tx).send(1).sent());
    head.join();
}

TEST(LostTasks, SleepForeverAndWhatJoinsIt) {
    blitz::runtime rt(quiet());
    auto forever = rt.spawn(lt_sleep_forever());  // leak 4
    const std::uint64_t forever_id = forever.id();
    auto joiner = rt.spawn(lt_join(std::move(forever)));  // leak 5
    auto hour = rt.spawn(lt_sleep_hour());                // twin: a sleep that ends
    const std::uint64_t hour_id = hour.id();
    auto hour_joiner = rt.spawn(lt_join(std::move(hour)));  // twin: joins a task that ends
    const lost_report r = until_reported(rt, {forever_id, joiner.id()});
    if (::testing::Test::HasFailure()) return;  // the report lacks a seeded leak
    EXPECT_FALSE(find(r, forever_id)->deadlocked);
    EXPECT_TRUE(find(r, forever_id)->waits_for.empty());
    EXPECT_EQ(find(r, joiner.id())->waits_for, std::vector<std::uint64_t>{forever_id});
    EXPECT_FALSE(find(r, joiner.id())->deadlocked);
    expect_not_reported(r, hour_id, "a one-hour sleep");
    expect_not_reported(r, hour_joiner.id(), "the join of a one-hour sleep");
    joiner.abort();
    hour_joiner.abort();
}

TEST(LostTasks, ChannelsWhoseSendersAreStuck) {
    blitz::runtime rt(quiet());
    auto own = rt.spawn(lt_own_sender());  // leak 6: its only sender in its own frame
    // Leak 7: two tasks each holding the other's sender.
    auto [tx1, rx1] = blitz::channel<int>(1);
    auto [tx2, rx2] = blitz::channel<int>(1);
    auto a = rt.spawn(lt_recv_holding(std::move(rx1), std::move(tx2)));
    auto b = rt.spawn(lt_recv_holding(std::move(rx2), std::move(tx1)));
    auto nested = rt.spawn(lt_parent_holding_sender());  // leak 11: sender in the parent frame
    // Leak 12: a join of a deadlocked task.
    auto [c_tx, c_rx] = blitz::oneshot<join_handle<void>>();
    auto c = rt.spawn(lt_join_received(std::move(c_rx)));
    const std::uint64_t a_id = a.id();
    hand(c_tx, std::move(a));
    // Twins: the sender with the test's thread; in a heap object the frame points to; with a
    // task that will wake from a timer.
    auto [tx3, rx3] = blitz::channel<int>(1);
    auto main_held = rt.spawn(lt_recv(std::move(rx3)));
    auto [tx4, rx4] = blitz::channel<int>(1);
    auto heap = std::make_shared<sender<int>>(std::move(tx4));
    auto heap_held = rt.spawn(lt_recv_holding_heap(std::move(rx4), heap));
    heap.reset();  // now only the frame's shared_ptr reaches it: unprovable, not reported
    auto [tx5, rx5] = blitz::channel<int>(1);
    auto [tx6, rx6] = blitz::channel<int>(1);
    auto sleeper_held = rt.spawn(lt_recv(std::move(rx5)));
    auto sleeper = rt.spawn(lt_recv_holding_then_sleep(std::move(rx6), std::move(tx5)));

    const lost_report r = until_reported(rt, {own.id(), a_id, b.id(), nested.id(), c.id()});
    if (::testing::Test::HasFailure()) return;  // the report lacks a seeded leak
    EXPECT_TRUE(find(r, own.id())->deadlocked);
    EXPECT_EQ(find(r, own.id())->task.waiting_on.kind, "channel recv");
    EXPECT_TRUE(find(r, a_id)->deadlocked);
    EXPECT_EQ(find(r, a_id)->waits_for, std::vector<std::uint64_t>{b.id()});
    EXPECT_TRUE(find(r, nested.id())->deadlocked);
    EXPECT_EQ(find(r, nested.id())->task.chain.size(), 2u);
    EXPECT_FALSE(find(r, c.id())->deadlocked);
    EXPECT_EQ(find(r, c.id())->waits_for, std::vector<std::uint64_t>{a_id});
    expect_not_reported(r, main_held.id(), "a receive whose sender a plain thread holds");
    expect_not_reported(r, heap_held.id(), "a receive whose sender is on the heap");
    expect_not_reported(r, sleeper_held.id(), "a receive whose sender a sleeping task holds");
    expect_not_reported(r, sleeper.id(), "a sleeping task");
    ASSERT_TRUE(rt.block_on(tx3.send(1)).sent());
    main_held.join();
}

TEST(LostTasks, MutexDeadlocks) {
    blitz::runtime rt(quiet());
    mutex m1, m2, m3;
    // Leak 8: ABBA. Each takes its first lock, then waits for the go, then the other lock.
    auto [ga_tx, ga_rx] = blitz::oneshot<int>();
    auto [gb_tx, gb_rx] = blitz::oneshot<int>();
    auto a = rt.spawn(lt_lock_then(m1, m2, std::move(ga_rx)));
    auto b = rt.spawn(lt_lock_then(m2, m1, std::move(gb_rx)));
    // Both hold their first lock before either goes on (counted dumps, not time).
    for (int i = 0; i < 100000 && !(m1.is_locked() && m2.is_locked()); ++i)
        std::this_thread::yield();
    ASSERT_TRUE(std::move(ga_tx).send(1).sent());
    ASSERT_TRUE(std::move(gb_tx).send(1).sent());
    // Leak 9: the guard's holder joins the task waiting for the lock.
    auto [h_tx, h_rx] = blitz::oneshot<join_handle<void>>();
    auto holder = rt.spawn(lt_lock_then_join(m3, std::move(h_rx)));
    for (int i = 0; i < 100000 && !m3.is_locked(); ++i) std::this_thread::yield();
    auto waiter = rt.spawn(lt_lock(m3));
    const std::uint64_t waiter_id = waiter.id();
    hand(h_tx, std::move(waiter));
    // Twin: a lock held by a task waiting for the test's signal.
    mutex m4;
    auto [g4_tx, g4_rx] = blitz::oneshot<int>();
    mutex unused;
    auto holder4 = rt.spawn(lt_lock_then(m4, unused, std::move(g4_rx)));
    for (int i = 0; i < 100000 && !m4.is_locked(); ++i) std::this_thread::yield();
    auto waiter4 = rt.spawn(lt_lock(m4));

    const lost_report r = until_reported(rt, {a.id(), b.id(), holder.id(), waiter_id});
    if (::testing::Test::HasFailure()) return;  // the report lacks a seeded leak
    for (const std::uint64_t id : {a.id(), b.id(), holder.id(), waiter_id}) {
        EXPECT_TRUE(find(r, id)->deadlocked) << r.to_string();
    }
    EXPECT_EQ(find(r, a.id())->task.waiting_on.kind, "mutex lock");
    EXPECT_EQ(find(r, a.id())->waits_for, std::vector<std::uint64_t>{b.id()});
    EXPECT_EQ(find(r, waiter_id)->waits_for, std::vector<std::uint64_t>{holder.id()});
    expect_not_reported(r, waiter4.id(), "a lock held by a task that will go on");
    expect_not_reported(r, holder4.id(), "a holder waiting for a plain thread");
    ASSERT_TRUE(std::move(g4_tx).send(1).sent());
    waiter4.join();
    holder4.join();
    a.abort();
    b.abort();
    holder.abort();
}

TEST(LostTasks, SelectsStuckOnEveryBranch) {
    blitz::runtime rt(quiet());
    auto stuck = rt.spawn(lt_select_own(false));  // leak 10: both branches' senders its own
    auto timed = rt.spawn(lt_select_own(true));   // twin: one branch is a one-hour sleep
    const lost_report r = until_reported(rt, {stuck.id()});
    if (::testing::Test::HasFailure()) return;  // the report lacks a seeded leak
    EXPECT_EQ(find(r, stuck.id())->task.waiting_on.kind, "select");
    EXPECT_TRUE(find(r, stuck.id())->deadlocked);
    expect_not_reported(r, timed.id(), "a select with a timeout branch");
    stuck.abort();
    timed.abort();
}

// A leak Go's corpus has that blitz rules out: a receiver whose senders are all gone is woken
// with the end of the channel instead of waiting forever.
TEST(LostTasks, ChannelClosedByLastSender) {
    blitz::runtime rt(quiet());
    auto [tx, rx] = blitz::channel<int>(1);
    auto h = rt.spawn(lt_recv(std::move(rx)));
    {
        auto gone = std::move(tx);
    }
    h.join();  // returns: the receive saw the end
    EXPECT_TRUE(rt.find_lost().lost.empty());
}

// The analysis itself, on dumps made by hand: a task polled between the two dumps, or whose
// wait changed, is never a candidate, so a snapshot taken mid-change proves nothing.
TEST(LostTasks, TwoDumpsMustAgree) {
    blitz::task_snapshot t;
    t.id = 7;
    t.state = blitz::task_snapshot::state_kind::waiting;
    t.polls = 3;
    t.waiting_on.kind = "join";
    t.waiting_on.provable = true;
    t.waiting_on.ended_by_tasks = {7};
    blitz::runtime_dump d1, d2;
    d1.tasks = {t};
    d2.tasks = {t};
    ASSERT_EQ(blitz::find_lost(d1, d2).lost.size(), 1u);  // a self-join, seen twice
    d2.tasks[0].polls = 4;                                // polled in between
    EXPECT_TRUE(blitz::find_lost(d1, d2).lost.empty());
    d2.tasks[0].polls = 3;
    d2.tasks[0].waiting_on.provable = false;
    EXPECT_TRUE(blitz::find_lost(d1, d2).lost.empty());
    // A handle in no listed frame keeps the wait alive.
    blitz::task_snapshot u = t;
    u.waiting_on.kind = "channel recv";
    u.waiting_on.ended_by_tasks.clear();
    static int somewhere;
    u.waiting_on.ended_by_handles = {&somewhere};
    d1.tasks = {u};
    d2.tasks = {u};
    EXPECT_TRUE(blitz::find_lost(d1, d2).lost.empty());
    // ... and one inside its own frame proves it.
    u.frame_memory = {{&somewhere, sizeof somewhere}};
    d1.tasks = {u};
    d2.tasks = {u};
    EXPECT_EQ(blitz::find_lost(d1, d2).lost.size(), 1u);
}

}  // namespace
