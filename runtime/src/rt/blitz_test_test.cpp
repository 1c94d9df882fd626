// SPDX-License-Identifier: MIT
// BLITZ_TEST and BLITZ_TEST_PAUSED (issue 47, blitz/testing/gtest.hpp): coroutine bodies on a
// fresh current-thread runtime, a paused clock that jumps to the next timer, and the failures a
// test must report: a body that throws, a task nobody awaits that throws, a task left running.

#include <gtest/gtest-spi.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "blitz/testing/gtest.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

BLITZ_TEST(BlitzTest, TheBodyRunsOnTheTestsThreadWithItsChildren) {
    const auto me = std::this_thread::get_id();
    auto child = spawn([]() -> task<std::thread::id> { co_return std::this_thread::get_id(); }());
    co_await sleep(1ms);
    const auto id = co_await child;
    EXPECT_EQ(id, me);
}

BLITZ_TEST_PAUSED(BlitzTest, APausedClockJumpsToTheNextTimer) {
    const auto wall = std::chrono::steady_clock::now();
    const instant t0 = now();
    co_await sleep(std::chrono::hours(1));
    EXPECT_GE(now() - t0, std::chrono::hours(1));
    auto r = co_await timeout(std::chrono::hours(2), sleep(std::chrono::hours(3)));
    EXPECT_TRUE(r.timed_out());
    EXPECT_LT(std::chrono::steady_clock::now() - wall, std::chrono::seconds(60))
        << "three virtual hours should not take real ones";
}

// The clock does not jump while blocking work runs: its result is what the timer races.
BLITZ_TEST_PAUSED(BlitzTest, ThePausedClockWaitsForBlockingWork) {
    auto r = co_await timeout(1s, spawn_blocking([] {
                                  std::this_thread::sleep_for(50ms);
                                  return 7;
                              }));
    BLITZ_CO_ASSERT(!r.timed_out());
    EXPECT_EQ(r.value(), 7);
}

task<void> leaves_a_task_behind() {
    spawn([]() -> task<void> { co_await sleep(std::chrono::hours(1)); }()).detach();
    co_return;
}

task<void> throws() {
    throw std::runtime_error("boom");
    co_return;
}

task<void> spawns_a_throwing_task() {
    spawn(throws()).detach();
    co_await yield_now();
}

task<void> stops_at_a_failed_assert(bool& after) {
    BLITZ_CO_ASSERT(1 + 1 == 3);
    after = true;
}

TEST(BlitzTest, ATaskLeftRunningFailsTheTest) {
    EXPECT_NONFATAL_FAILURE(testing::run_coroutine_test(leaves_a_task_behind), "left suspended");
}

TEST(BlitzTest, ABodyThatThrowsFailsTheTest) {
    EXPECT_NONFATAL_FAILURE(testing::run_coroutine_test(throws), "the test body threw: boom");
}

TEST(BlitzTest, AnUnawaitedTaskThatThrowsFailsTheTest) {
    EXPECT_NONFATAL_FAILURE(testing::run_coroutine_test(spawns_a_throwing_task),
                            "a task nobody awaits ended with an exception: boom");
}

TEST(BlitzTest, CoAssertEndsTheBody) {
    bool after = false;
    EXPECT_NONFATAL_FAILURE(
        testing::run_coroutine_test([&after] { return stops_at_a_failed_assert(after); }),
        "BLITZ_CO_ASSERT failed: 1 + 1 == 3");
    EXPECT_FALSE(after);
}

}  // namespace
}  // namespace blitz
