// SPDX-License-Identifier: MIT
// GoogleTest tests with coroutine bodies (blitz/testing/gtest.hpp; Tokio's #[tokio::test]).
// Each BLITZ_TEST runs on a fresh current-thread runtime; BLITZ_TEST_PAUSED on a paused clock
// that jumps to the next timer whenever nothing can run, so an hour of backoff takes no time.
// A test fails if its body throws, a task nobody awaits throws, or a task is left running.
//
//   build/release/example_blitz_test

#include <blitz/blitz.hpp>
#include <blitz/testing/gtest.hpp>
#include <chrono>

using namespace std::chrono_literals;

// The code under test: retries `attempt` with exponential backoff, 1 s, 2 s, 4 s, ...
template <class F>
blitz::task<int> retry_with_backoff(F attempt) {
    auto wait = 1s;
    for (int n = 1;; ++n) {
        if (attempt(n)) co_return n;
        co_await blitz::sleep(wait);
        wait *= 2;
    }
}

BLITZ_TEST(Pipeline, StagesHandValuesOn) {
    auto [tx, rx] = blitz::channel<int>(4);
    auto producer = blitz::spawn([](blitz::sender<int> tx) -> blitz::task<void> {
        for (int i = 1; i <= 10; ++i) (void)co_await tx.send(i);
    }(std::move(tx)));
    int sum = 0;
    for (;;) {
        auto v = co_await rx.recv();
        if (!v) break;  // closed: the producer finished and dropped its sender
        sum += *v;
    }
    co_await producer;
    EXPECT_EQ(sum, 55);
}

BLITZ_TEST_PAUSED(Backoff, SixAttemptsTakeThirtyOneSeconds) {
    const auto t0 = blitz::now();
    auto sixth_time_lucky = [](int n) { return n >= 6; };
    const int attempts = co_await retry_with_backoff(sixth_time_lucky);
    EXPECT_EQ(attempts, 6);
    EXPECT_EQ(blitz::now() - t0, 31s);  // 1 + 2 + 4 + 8 + 16, exactly: the clock is virtual
}

BLITZ_TEST_PAUSED(Backoff, GivesUpAtItsDeadline) {
    auto never = [](int) { return false; };
    auto r = co_await blitz::timeout(10s, retry_with_backoff(never));
    EXPECT_TRUE(r.timed_out());
}
