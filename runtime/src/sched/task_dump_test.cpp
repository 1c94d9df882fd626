// SPDX-License-Identifier: MIT
// The task dump (issue 46, runtime::dump): every waiting task is listed with its await chain,
// from the spawned coroutine down to the blitz awaitable it waits on, named as each awaitable
// names itself; a task woken or aborted while the dump reads it is not lost; a worker stuck in
// a poll is named as not answering instead of hanging the dump; a dump from inside a task
// lists that task as running.

#include "sched/task_dump.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"

namespace {

using namespace std::chrono_literals;
using blitz::runtime_dump;
using blitz::task;
using blitz::task_snapshot;

blitz::config quiet(unsigned workers) {
    blitz::config c;
    c.workers = workers;
    c.stall_threshold = 0ns;  // the spinning tests below are stalls on purpose
    return c;
}

const task_snapshot* find_task(const runtime_dump& d, std::uint64_t id) {
    for (const auto& t : d.tasks) {
        if (t.id == id) return &t;
    }
    return nullptr;
}

bool chain_has(const task_snapshot& t, const std::string& part) {
    return std::any_of(t.chain.begin(), t.chain.end(),
                       [&](const std::string& f) { return f.find(part) != std::string::npos; });
}

// Dumps until `n` tasks wait (spawned tasks reach their await within a few polls; counted in
// dumps, not time: each dump lets every worker run a tick).
runtime_dump dump_when_waiting(blitz::runtime& rt, std::size_t n) {
    for (int i = 0; i < 100000; ++i) {
        runtime_dump d = rt.dump();
        const auto waiting = std::count_if(
            d.tasks.begin(), d.tasks.end(),
            [](const task_snapshot& t) { return t.state == task_snapshot::state_kind::waiting; });
        if (static_cast<std::size_t>(waiting) >= n) return d;
        std::this_thread::yield();
    }
    ADD_FAILURE() << "fewer than " << n << " tasks ever waited";
    return {};
}

task<int> dump_inner_recv(blitz::receiver<int>& rx) {
    auto v = co_await rx.recv();
    co_return v.value_or(-1);
}

task<int> dump_outer_recv(blitz::receiver<int> rx) {
    const int v = co_await dump_inner_recv(rx);
    co_return v + 1;
}

task<void> dump_sleeper() { co_await blitz::sleep(1h); }

task<void> dump_locker(blitz::mutex& m) { auto g = co_await m.lock(); }

task<void> dump_joiner(blitz::join_handle<void> h) { co_await h; }

task<int> dump_selector(blitz::receiver<int> rx) {
    auto r = co_await blitz::select(rx.recv(), blitz::sleep(1h));
    co_return static_cast<int>(r.index());
}

TEST(TaskDump, NamesEveryWaitingTaskWithItsChainAndLeaf) {
    blitz::runtime rt(quiet(2));
    auto [tx, rx] = blitz::channel<int>(4);
    auto [tx2, rx2] = blitz::channel<int>(4);
    blitz::mutex m;
    auto held = rt.block_on(m.lock());  // held by the test: the locker waits
    auto recv = rt.spawn(dump_outer_recv(std::move(rx)));
    auto sleeper = rt.spawn(dump_sleeper());
    auto locker = rt.spawn(dump_locker(m));
    auto joined = rt.spawn(dump_sleeper());
    const std::uint64_t joined_id = joined.id();
    auto joiner = rt.spawn(dump_joiner(std::move(joined)));
    auto selector = rt.spawn(dump_selector(std::move(rx2)));

    const runtime_dump d = dump_when_waiting(rt, 6);
    const std::string text = d.to_string();
    SCOPED_TRACE(text);
    EXPECT_TRUE(d.workers_not_answering.empty());

    const task_snapshot* r = find_task(d, recv.id());
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->state, task_snapshot::state_kind::waiting);
    EXPECT_EQ(r->waiting_on.kind, "channel recv");
    ASSERT_EQ(r->chain.size(), 2u);  // outer, then the inner coroutine it awaits inline
    EXPECT_NE(r->chain[0].find("dump_outer_recv"), std::string::npos);
    EXPECT_NE(r->chain[1].find("dump_inner_recv"), std::string::npos);
    EXPECT_TRUE(r->spawn_site_known);
    EXPECT_NE(std::string(r->spawn_site.file_name()).find("task_dump_test"), std::string::npos);
    EXPECT_GE(r->polls, 1u);

    const task_snapshot* s = find_task(d, sleeper.id());
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->waiting_on.kind, "sleep");
    EXPECT_GT(s->waiting_on.deadline, d.taken_at + 59min);
    EXPECT_TRUE(chain_has(*s, "dump_sleeper"));

    const task_snapshot* l = find_task(d, locker.id());
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->waiting_on.kind, "mutex lock");
    EXPECT_EQ(l->waiting_on.object, &m.raw());

    const task_snapshot* j = find_task(d, joiner.id());
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->waiting_on.kind, "join");
    EXPECT_EQ(j->waiting_on.task, joined_id);

    const task_snapshot* sel = find_task(d, selector.id());
    ASSERT_NE(sel, nullptr);
    EXPECT_EQ(sel->waiting_on.kind, "select");
    EXPECT_NE(sel->waiting_on.detail.find("channel recv"), std::string::npos);
    EXPECT_NE(sel->waiting_on.detail.find("sleep"), std::string::npos);
    EXPECT_NE(sel->waiting_on.deadline.time_since_epoch().count(), 0);
    EXPECT_TRUE(chain_has(*sel, "dump_selector"));

    // The text and JSON forms carry the same tasks.
    EXPECT_NE(text.find("channel recv"), std::string::npos);
    EXPECT_NE(text.find("dump_inner_recv"), std::string::npos);
    const std::string json = d.to_json();
    EXPECT_NE(json.find("\"id\":" + std::to_string(recv.id())), std::string::npos);
    EXPECT_NE(json.find("\"kind\":\"join\""), std::string::npos);

    // The dump changed nothing: each task still completes as it would have.
    ASSERT_TRUE(rt.block_on(tx.send(41)).sent());
    EXPECT_EQ(recv.join(), 42);
    ASSERT_TRUE(rt.block_on(tx2.send(7)).sent());
    EXPECT_EQ(selector.join(), 0);
    held = {};
    locker.join();
    sleeper.abort();
    joiner.abort();
}

// A task that waits, is woken and waits again as fast as it can, while dumps claim and release
// it: no wake is lost (each round trip completes) and every abort lands.
task<void> dump_ping(blitz::receiver<int> rx, blitz::sender<int> tx) {
    for (;;) {
        auto v = co_await rx.recv();
        if (!v) co_return;  // the driver is done: dropping tx ends the next one
        if (!(co_await tx.send(*v + 1)).sent()) co_return;
    }
}

TEST(TaskDump, WakesAndAbortsDuringDumpsAreNotLost) {
    for (const unsigned workers : {1u, 2u, 4u}) {
        SCOPED_TRACE(workers);
        blitz::runtime rt(quiet(workers));
        constexpr int pairs = 16, rounds = 300;
        std::vector<blitz::join_handle<void>> pings;
        std::vector<blitz::join_handle<void>> sleepers;
        std::vector<blitz::sender<int>> starts;
        std::vector<blitz::receiver<int>> ends;
        for (int p = 0; p < pairs; ++p) {
            auto [atx, arx] = blitz::channel<int>(1);
            auto [btx, brx] = blitz::channel<int>(1);
            auto [ctx, crx] = blitz::channel<int>(1);
            pings.push_back(rt.spawn(dump_ping(std::move(arx), std::move(btx))));
            pings.push_back(rt.spawn(dump_ping(std::move(brx), std::move(ctx))));
            starts.push_back(std::move(atx));
            ends.push_back(std::move(crx));
            sleepers.push_back(rt.spawn(dump_sleeper()));
        }
        std::atomic<bool> stop{false};
        std::atomic<int> dumps{0};
        std::thread dumper([&] {
            while (!stop.load()) {
                (void)rt.dump();
                dumps.fetch_add(1);
            }
        });
        // Drive each pair through the chain a -> b -> c, for `rounds` round trips and until
        // the dumper has made 50 dumps meanwhile (counted, so that a slow machine still
        // overlaps them); then close it.
        auto driver = [&](int p) -> task<void> {
            for (int i = 0; i < rounds || dumps.load() < 50; ++i) {
                if (!(co_await starts[p].send(i)).sent()) throw std::runtime_error("closed");
                auto v = co_await ends[p].recv();
                if (!v || *v != i + 2) throw std::runtime_error("a value went missing");
            }
            {
                auto gone = std::move(starts[p]);
            }  // closes the chain
        };
        std::vector<blitz::join_handle<void>> drivers;
        for (int p = 0; p < pairs; ++p) drivers.push_back(rt.spawn(driver(p)));
        // Aborts of waiting tasks while dumps claim them.
        for (auto& s : sleepers) s.abort();
        for (auto& d : drivers) d.join();
        for (auto& p : pings) p.join();
        for (auto& s : sleepers) {
            try {
                s.join();
            } catch (...) {
                // cancelled, as asked
            }
            EXPECT_TRUE(s.is_cancelled());
        }
        stop.store(true);
        dumper.join();
        EXPECT_GT(dumps.load(), 0);
    }
}

// An awaitable whose describe function wakes its own task: the wake lands while the dump holds
// the task (between its claim and its release), every time.
struct wakes_when_described : blitz::detail::ready_hook {
    blitz::waker w;
    std::atomic<bool> woken{false};
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
        blitz::detail::task_header* t = blitz::detail::suspend_current(h, &ready, this, &describe);
        w = t->make_waker();
        return true;
    }
    void await_resume() const noexcept {}
    static bool ready(const blitz::detail::ready_hook* p) noexcept {
        return static_cast<const wakes_when_described*>(p)->woken.load();
    }
    static void describe(const blitz::detail::ready_hook* p, blitz::wait_point& out) {
        auto* self = const_cast<wakes_when_described*>(static_cast<const wakes_when_described*>(p));
        out.kind = "test: wakes itself when described";
        if (!self->woken.exchange(true)) std::move(self->w).wake();
    }
};

task<void> dump_woken_while_claimed() { co_await wakes_when_described{}; }

TEST(TaskDump, AWakeWhileTheDumpHoldsTheTaskRunsItAgain) {
    for (const unsigned workers : {1u, 2u}) {
        blitz::runtime rt(quiet(workers));
        auto h = rt.spawn(dump_woken_while_claimed());
        // Counted, not timed: each dump lets every worker run a tick; the first that reads the
        // task wakes it, and the release must queue it again.
        for (int i = 0; i < 10000 && !h.is_finished(); ++i) (void)rt.dump();
        EXPECT_TRUE(h.is_finished()) << "the wake that came during the dump was lost";
    }
}

TEST(TaskDump, AWorkerStuckInAPollIsNamedNotWaitedFor) {
    blitz::runtime rt(quiet(2));
    std::atomic<bool> spinning{false}, release{false};
    auto stuck = rt.spawn([](std::atomic<bool>& on, std::atomic<bool>& go) -> task<void> {
        on.store(true);
        while (!go.load()) std::this_thread::yield();  // a poll that does not return
        co_return;
    }(spinning, release));
    while (!spinning.load()) std::this_thread::yield();
    const runtime_dump d = rt.dump(50ms);
    ASSERT_EQ(d.workers_not_answering.size(), 1u) << d.to_string();
    EXPECT_NE(d.to_string().find("did not answer"), std::string::npos);
    release.store(true);
    stuck.join();
    // Once it returns, the same worker answers again.
    const runtime_dump after = rt.dump();
    EXPECT_TRUE(after.workers_not_answering.empty()) << after.to_string();
}

TEST(TaskDump, FromInsideATaskListsItselfAsRunning) {
    blitz::runtime rt(quiet(2));
    const auto [id, d] =
        rt.block_on([](blitz::runtime& r) -> task<std::pair<std::uint64_t, runtime_dump>> {
            co_return std::make_pair(blitz::this_task_id(), r.dump());
        }(rt));
    // The asking task has not suspended yet, so it is in no list: it shows only when its
    // worker's list holds it. Either way the dump returned (its own worker answered inline).
    EXPECT_TRUE(d.workers_not_answering.empty()) << d.to_string();
    if (const task_snapshot* self = find_task(d, id)) {
        EXPECT_EQ(self->state, task_snapshot::state_kind::running);
    }
}

TEST(TaskDump, SuspendedAskerIsListedAsRunning) {
    blitz::runtime rt(quiet(1));
    const auto [id, d] =
        rt.block_on([](blitz::runtime& r) -> task<std::pair<std::uint64_t, runtime_dump>> {
            co_await blitz::yield_now();  // listed now
            co_return std::make_pair(blitz::this_task_id(), r.dump());
        }(rt));
    const task_snapshot* self = find_task(d, id);
    ASSERT_NE(self, nullptr) << d.to_string();
    EXPECT_EQ(self->state, task_snapshot::state_kind::running);
}

TEST(TaskDump, ConcurrentDumpsEachSeeEveryWorker) {
    blitz::runtime rt(quiet(2));
    auto h = rt.spawn(dump_sleeper());
    (void)dump_when_waiting(rt, 1);
    std::vector<std::thread> ts;
    std::atomic<int> complete{0};
    for (int t = 0; t < 4; ++t) {
        ts.emplace_back([&] {
            for (int i = 0; i < 50; ++i) {
                const runtime_dump d = rt.dump();
                if (d.workers_not_answering.empty() && find_task(d, h.id())) complete.fetch_add(1);
            }
        });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(complete.load(), 200);
    h.abort();
}

TEST(TaskDump, ABusyWorkerAnswersBetweenSpins) {
    // Busy mode: an idle worker spins instead of parking (forever, by default); it answers at
    // once all the same.
    blitz::config c = quiet(1);
    c.io_mode = blitz::io_mode_kind::busy;
    c.topology.policy = blitz::placement_policy::compact;
    blitz::runtime rt(c);
    auto h = rt.spawn(dump_sleeper());
    const runtime_dump d = dump_when_waiting(rt, 1);
    EXPECT_TRUE(d.workers_not_answering.empty()) << d.to_string();
    ASSERT_NE(find_task(d, h.id()), nullptr);
    h.abort();
}

TEST(TaskDump, EmptyAfterShutdown) {
    blitz::runtime rt(quiet(1));
    auto h = rt.spawn(dump_sleeper());
    rt.shutdown();
    EXPECT_TRUE(rt.dump().tasks.empty());
}

}  // namespace
