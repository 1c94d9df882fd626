// SPDX-License-Identifier: MIT
// The current-thread runtime (issue 47, config::flavor): every task, timer and I/O operation
// runs on the thread that calls block_on (or join), spawns from other threads queue and wake
// it, two threads may wait on it at once, and shutdown keeps its guarantees.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/io_backends.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

config current(io_backend_kind b = io_backend_kind::automatic) {
    config c = config::current_thread();
    c.io_backend = b;
    return c;
}

task<std::thread::id> where_am_i() { co_return std::this_thread::get_id(); }

task<int> receive(oneshot_receiver<int> rx) {
    auto v = co_await rx;
    co_return v.value_or(-1);
}

TEST(CurrentThread, EveryTaskRunsOnTheCallingThread) {
    runtime rt(current());
    EXPECT_EQ(rt.num_workers(), 1u);
    const auto me = std::this_thread::get_id();
    const auto seen = rt.block_on([]() -> task<std::set<std::thread::id>> {
        std::set<std::thread::id> ids;
        ids.insert(std::this_thread::get_id());
        std::vector<join_handle<std::thread::id>> hs;
        for (int i = 0; i < 200; ++i) hs.push_back(spawn(where_am_i()));
        for (auto& h : hs) {
            const auto id = co_await h;
            ids.insert(id);
        }
        co_await sleep(1ms);  // the timer fires on this thread too
        ids.insert(std::this_thread::get_id());
        co_return ids;
    }());
    EXPECT_EQ(seen, std::set<std::thread::id>{me});
    // Another thread's block_on drives it there.
    std::thread other([&] {
        const auto id = rt.block_on(where_am_i());
        EXPECT_EQ(id, std::this_thread::get_id());
    });
    other.join();
    const runtime_metrics m = rt.metrics();
    ASSERT_EQ(m.workers.size(), 1u);
    EXPECT_GE(m.workers[0].polls, 202u);
    EXPECT_EQ(m.num_parked, 1u) << "between two block_on calls its worker counts as parked";
}

TEST(CurrentThread, NothingRunsBetweenBlockOnCallsAndQueuedTasksRunAtTheNext) {
    runtime rt(current());
    std::atomic<int> ran{0};
    auto h = rt.spawn([](std::atomic<int>& ran) -> task<int> {
        ran.fetch_add(1);
        co_return 7;
    }(ran));
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(ran.load(), 0) << "a current-thread runtime has no thread of its own";
    rt.block_on([]() -> task<void> { co_return; }());
    EXPECT_EQ(ran.load(), 1) << "the queued task runs during the next block_on";
    EXPECT_EQ(h.join(), 7);
}

TEST(CurrentThread, JoinFromAPlainThreadDrivesTheRuntime) {
    runtime rt(current());
    auto h = rt.spawn([]() -> task<int> {
        int sum = 0;
        for (int i = 0; i < 100; ++i) {
            const int v = co_await spawn([](int i) -> task<int> { co_return i; }(i));
            sum += v;
            co_await yield_now();
        }
        co_return sum;
    }());
    EXPECT_EQ(h.join(), 4950);
}

// Spawns and wakes from other threads reach a driver asleep in its park (no park timeout
// needed: the park timeout is an hour).
TEST(CurrentThread, SpawnsAndWakesFromOtherThreadsWakeTheDriver) {
    config c = current();
    c.park_timeout = std::chrono::hours(1);
    runtime rt(c);
    auto [tx, rx] = oneshot<int>();
    std::thread producer([&rt, tx = std::move(tx)]() mutable {
        std::this_thread::sleep_for(20ms);
        // A spawn from this thread: queued, and the driver is woken to run it.
        auto h = rt.spawn([]() -> task<int> { co_return 5; }());
        std::this_thread::sleep_for(20ms);
        (void)std::move(tx).send(h.join() + 1);  // join from here waits: the driver runs it
    });
    const int got = rt.block_on(receive(std::move(rx)));
    producer.join();
    EXPECT_EQ(got, 6);
}

// Two threads wait at once: the one that does not drive waits for its task, which the driver
// runs, and returns as soon as it completes (not when the driver's own task does).
TEST(CurrentThread, TwoThreadsBlockOnAtOnceAndNeitherWaitsForTheOther) {
    config c = current();
    c.park_timeout = std::chrono::hours(1);
    runtime rt(c);
    auto [tx, rx] = oneshot<int>();
    std::atomic<bool> second_done{false};
    std::thread first([&, rx = std::move(rx)]() mutable {
        // Drives until the second thread, after its own block_on returned, sends.
        EXPECT_EQ(rt.block_on(receive(std::move(rx))), 42);
    });
    std::this_thread::sleep_for(20ms);
    const int v = rt.block_on([]() -> task<int> {
        co_await sleep(5ms);
        co_return 41;
    }());
    second_done = true;
    EXPECT_EQ(v, 41);
    (void)std::move(tx).send(42);
    first.join();
    EXPECT_TRUE(second_done.load());
}

// A thread waiting for the core whose task is still pending when the driver's own task
// completes takes the core over (it is told the core is free) and runs its task itself.
TEST(CurrentThread, AWaiterTakesTheCoreOverWhenTheDriverReturns) {
    config c = current();
    c.park_timeout = std::chrono::hours(1);
    runtime rt(c);
    auto [tx_a, rx_a] = oneshot<int>();
    auto [tx_b, rx_b] = oneshot<int>();
    // Slow polls keep a's last tick going well after its own task completed (whose wake
    // notifies b too early to matter): b is back to waiting when a gives the core up.
    std::atomic<bool> stop{false};
    rt.spawn([](std::atomic<bool>& stop) -> task<void> {
          while (!stop.load()) {
              const auto until = std::chrono::steady_clock::now() + 50us;
              while (std::chrono::steady_clock::now() < until) {
              }
              co_await yield_now();
          }
      }(stop))
        .detach();
    std::thread a([&rt, rx = std::move(rx_a)]() mutable {
        EXPECT_EQ(rt.block_on(receive(std::move(rx))), 1);
    });
    std::this_thread::sleep_for(20ms);  // a drives
    std::thread b([&rt, rx = std::move(rx_b)]() mutable {
        EXPECT_EQ(rt.block_on(receive(std::move(rx))), 2);
    });
    std::this_thread::sleep_for(20ms);  // b waits for its task or the core
    (void)std::move(tx_a).send(1);
    a.join();  // a's drive is over; b's task still waits for its value
    (void)std::move(tx_b).send(2);
    b.join();
    stop = true;
}

TEST(CurrentThread, AnAbortFromAnotherThreadEndsBlockOn) {
    config c = current();
    c.park_timeout = std::chrono::hours(1);
    runtime rt(c);
    auto h = rt.spawn([]() -> task<int> {
        co_await sleep(std::chrono::hours(1));
        co_return 1;
    }());
    std::thread aborter([&h] {
        std::this_thread::sleep_for(30ms);
        h.abort();
    });
    EXPECT_THROW(h.join(), task_cancelled);
    aborter.join();
}

// A task_scope's abort_all from a plain thread completes an idle task there, on that thread:
// its join waker must wake the driver asleep in its park (an hour-long one here).
TEST(CurrentThread, ATaskCompletedOnAnotherThreadWakesTheDriver) {
    config c = current();
    c.park_timeout = std::chrono::hours(1);
    runtime rt(c);
    task_scope scope;
    auto h = rt.block_on([](task_scope& s) -> task<join_handle<void>> {
        co_return s.spawn_with_handle(
            []() -> task<void> { co_await sleep(std::chrono::hours(1)); }());
    }(scope));
    std::thread aborter([&scope] {
        std::this_thread::sleep_for(30ms);
        scope.abort_all();  // the sleeper is idle: it completes here, as cancelled
    });
    EXPECT_THROW(h.join(), task_cancelled);
    aborter.join();
}

TEST(CurrentThread, BlockOnInsideATaskIsRefused) {
    runtime rt(current());
    const bool refused = rt.block_on([](runtime& rt) -> task<bool> {
        try {
            rt.block_on([]() -> task<void> { co_return; }());
        } catch (const std::logic_error&) {
            co_return true;
        }
        co_return false;
    }(rt));
    EXPECT_TRUE(refused);
}

// K3 on the current-thread runtime: what is queued or suspended when it is destroyed is
// cancelled and destroyed exactly once; join handles that outlive it say cancelled.
TEST(CurrentThread, ShutdownCancelsWhatIsLeft) {
    std::atomic<int> destroyed{0};
    struct counts {
        std::atomic<int>* n;
        ~counts() { n->fetch_add(1); }
    };
    std::vector<join_handle<void>> hs;
    {
        runtime rt(current());
        for (int i = 0; i < 10; ++i) {
            hs.push_back(rt.spawn([](std::atomic<int>& d) -> task<void> {
                counts c{&d};
                co_await sleep(std::chrono::hours(1));
            }(destroyed)));
        }
        // Half of them started (suspended on their timers), half never polled.
        rt.block_on([]() -> task<void> { co_await yield_now(); }());
        for (int i = 0; i < 10; ++i) {
            hs.push_back(rt.spawn([](std::atomic<int>& d) -> task<void> {
                counts c{&d};
                co_await sleep(std::chrono::hours(1));
            }(destroyed)));
        }
    }
    EXPECT_EQ(destroyed.load(), 10) << "the started ones unwound their frames";
    for (auto& h : hs) EXPECT_TRUE(h.is_cancelled());
}

TEST(CurrentThread, ShutdownTimeoutLetsTrackedTasksFinish) {
    runtime rt(current());
    task_tracker tracker;
    std::atomic<int> finished{0};
    for (int i = 0; i < 4; ++i) {
        rt.spawn(tracker.track([](std::atomic<int>& f) -> task<void> {
              co_await sleep(5ms);
              f.fetch_add(1);
          }(finished)))
            .detach();
    }
    EXPECT_TRUE(rt.shutdown_timeout(10s, &tracker));
    EXPECT_EQ(finished.load(), 4);
}

// The task dump between two block_on calls: nobody drives the worker, so the dumping thread
// lists its tasks itself; during a block_on the driver answers, as a worker does.
TEST(CurrentThread, DumpListsTheTasksWhetherOrNotAThreadDrivesIt) {
    runtime rt(current());
    auto [tx, rx] = oneshot<int>();
    auto waiting = rt.spawn(receive(std::move(rx)));
    rt.block_on([]() -> task<void> { co_await yield_now(); }());
    const runtime_dump idle = rt.dump(std::chrono::seconds(5));
    EXPECT_TRUE(idle.workers_not_answering.empty());
    EXPECT_EQ(idle.tasks.size(), 1u) << idle.to_string();
    std::thread dumper([&rt] {
        std::this_thread::sleep_for(20ms);
        const runtime_dump d = rt.dump(std::chrono::seconds(5));
        EXPECT_TRUE(d.workers_not_answering.empty());
        EXPECT_EQ(d.tasks.size(), 2u) << d.to_string();  // the waiting task and the sleeper
    });
    rt.block_on([]() -> task<void> { co_await sleep(100ms); }());
    dumper.join();
    (void)std::move(tx).send(3);
    EXPECT_EQ(waiting.join(), 3);
}

TEST(CurrentThread, ConfigsItCannotHonourAreRefusedWithTheReason) {
    auto message = [](config c) {
        try {
            c.validate();
        } catch (const config_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    config many = config::current_thread();
    many.workers = 4;
    EXPECT_NE(message(many).find("use 0 or 1"), std::string::npos) << message(many);
    config busy = config::current_thread();
    busy.io_mode = io_mode_kind::busy;
    busy.topology.policy = placement_policy::compact;
    EXPECT_NE(message(busy).find("busy"), std::string::npos) << message(busy);
    config placed = config::current_thread();
    placed.topology.policy = placement_policy::compact;
    EXPECT_NE(message(placed).find("placement policy"), std::string::npos) << message(placed);
    config zero = config::current_thread();
    zero.workers = 0;
    EXPECT_EQ(message(zero), "");
    EXPECT_EQ(zero.resolved_workers(), 1u);
    EXPECT_EQ(parse_flavor("current_thread"), runtime_flavor::current_thread);
    EXPECT_STREQ(to_string(runtime_flavor::multi_thread), "multi_thread");
    EXPECT_THROW(parse_flavor("single"), config_error);
}

class CurrentThreadIo : public ::testing::TestWithParam<io_backend_kind> {};

TEST_P(CurrentThreadIo, EchoOverLoopbackOnTheCallingThread) {
    runtime rt(current(GetParam()));
    const std::string got = rt.block_on([]() -> task<std::string> {
        auto l = net::tcp_listener::bind(*net::socket_address::parse("127.0.0.1:0"));
        if (!l) co_return "bind: " + l.error().message();
        const net::socket_address where = *l->local_addr();
        auto server = spawn(workloads::echo_server(std::move(*l), 4));
        std::string all;
        for (int c = 0; c < 4; ++c) {
            auto s = co_await net::tcp_stream::connect(where);
            if (!s) co_return "connect: " + s.error().message();
            std::string msg(20000, static_cast<char>('a' + c));
            auto w = co_await s->write_all(workloads::bytes_of(msg));
            if (!w) co_return "write: " + w.error().message();
            std::string back(msg.size(), '\0');
            auto r = co_await s->read_exact(
                std::as_writable_bytes(std::span<char>(back.data(), back.size())));
            if (!r) co_return "read: " + r.error().message();
            all += back == msg ? "ok" : "mismatch";
        }
        co_await server;
        co_return all;
    }());
    EXPECT_EQ(got, "okokokok");
    EXPECT_EQ(rt.metrics().io_rings.find("a ring per worker ("), std::string::npos)
        << "no ring per worker on a current-thread runtime: " << rt.metrics().io_rings;
}

INSTANTIATE_TEST_SUITE_P(Io, CurrentThreadIo, workloads::io_backends(), workloads::io_backend_name);

}  // namespace
}  // namespace blitz
