// SPDX-License-Identifier: MIT
// join, select and race, and timeout around them.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "blitz/blitz.hpp"
#include "blitz_testing/suite.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

task<int> after(std::chrono::milliseconds d, int v) {
    co_await sleep(d);
    co_return v;
}
task<std::string> word(std::string s) { co_return s; }
using workloads::nothing;
task<int> fails() {
    throw std::runtime_error("branch failed");
    co_return 0;
}

// Counts frames torn down: a parameter lives exactly as long as its task's frame (also when
// the task is cancelled before it ever ran).
struct flag_on_destroy {
    std::atomic<int>* n;
    explicit flag_on_destroy(std::atomic<int>& c) : n(&c) {}
    flag_on_destroy(flag_on_destroy&& o) noexcept : n(std::exchange(o.n, nullptr)) {}
    ~flag_on_destroy() {
        if (n) n->fetch_add(1);
    }
};
task<int> sleeper(flag_on_destroy) {
    co_await sleep(std::chrono::hours(1));
    co_return -1;
}
task<int> forever(std::atomic<int>& destroyed) { return sleeper(flag_on_destroy(destroyed)); }

TEST(Join, AllValuesInArgumentOrder) {
    runtime rt(conformance::fresh(2));
    auto [a, b, c] = rt.block_on(join(after(5ms, 1), word("two"), nothing()));
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, "two");
    (void)c;
}

TEST(Join, RethrowsTheFirstFailureAfterAllFinish) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> done{0};
    EXPECT_THROW(rt.block_on([](std::atomic<int>& d) -> task<void> {
        auto slow = [](std::atomic<int>& d) -> task<int> {
            co_await sleep(5ms);
            d.fetch_add(1);
            co_return 1;
        };
        (void)co_await join(fails(), slow(d));
    }(done)),
                 std::runtime_error);
    EXPECT_EQ(done.load(), 1);  // the other branch ran to the end first
}

TEST(Select, ReturnsTheWinnerAndItsValueAndCancelsTheLosers) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> destroyed{0};
    auto r = rt.block_on(select(forever(destroyed), after(2ms, 42), forever(destroyed)));
    ASSERT_EQ(r.index(), 1u);
    EXPECT_EQ(std::get<1>(r), 42);   // the value found is delivered
    EXPECT_EQ(destroyed.load(), 2);  // both losers are gone when select returns
}

TEST(Select, AWinnerThatThrowsRethrows) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> destroyed{0};
    EXPECT_THROW(rt.block_on([](std::atomic<int>& d) -> task<void> {
        auto r = co_await select(fails(), forever(d));
        (void)std::get<0>(r);
    }(destroyed)),
                 std::runtime_error);
    EXPECT_EQ(destroyed.load(), 1);
}

TEST(Race, FirstOfOneTypeWins) {
    runtime rt(conformance::fresh(2));
    EXPECT_EQ(rt.block_on(race(after(30ms, 1), after(1ms, 2), after(60ms, 3))), 2);
}

TEST(Combinators, TimeoutAroundSelectAndJoin) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> destroyed{0};
    auto r = rt.block_on([](std::atomic<int>& d) -> task<bool> {
        auto t = co_await timeout(5ms, select(forever(d), forever(d)));
        co_return t.timed_out();
    }(destroyed));
    EXPECT_TRUE(r);
    // The timed-out select was aborted, and with it both branches (a lost one hangs here and
    // the ctest timeout reports it).
    while (destroyed.load() < 2) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(destroyed.load(), 2);
    auto ok = rt.block_on([]() -> task<int> {
        auto t = co_await timeout(1s, join(after(1ms, 1), after(2ms, 2)));
        auto [a, b] = t.value();
        co_return a + b;
    }());
    EXPECT_EQ(ok, 3);
}

TEST(Combinators, CancellingTheCallerAbortsItsBranches) {
    runtime rt(conformance::fresh(2));
    std::atomic<int> destroyed{0};
    std::atomic<bool> made{false};
    auto h = rt.spawn([](std::atomic<int>& d, std::atomic<bool>& m) -> task<void> {
        auto both = join(forever(d), forever(d));
        m.store(true);  // both branch frames exist from here on
        (void)co_await std::move(both);
    }(destroyed, made));
    // Abort only once the branches exist: an abort before the first poll would cancel the
    // caller before it made any (CI saw that under g++ ASan with a fixed 5 ms head start).
    while (!made.load()) std::this_thread::yield();
    h.abort();
    EXPECT_THROW(h.join(), task_cancelled);
    // The aborted branches are torn down by the workers; a lost abort hangs here and the ctest
    // timeout reports it.
    while (destroyed.load() < 2) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(destroyed.load(), 2);
}

}  // namespace
}  // namespace blitz
