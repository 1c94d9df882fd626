// SPDX-License-Identifier: MIT
// Paused time in a test. With config::start_paused the runtime's clock stands still and moves
// only when the test calls runtime::advance(), which fires every timer it passes before it
// returns. Code that waits for minutes (a retry with exponential backoff here) is tested in
// milliseconds, and its timing is exact: no sleeps in the test, no flaky margins. Exit status 0
// when the retry made 6 attempts over exactly 31 virtual seconds.
//
//   build/release/example_paused_time

#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <thread>

using namespace std::chrono_literals;

// The code under test: calls `attempt` until it succeeds, sleeping 1 s, 2 s, 4 s, ... between
// tries. Returns the number of attempts.
template <class F>
blitz::task<int> retry_with_backoff(F attempt) {
    auto wait = 1s;
    for (int n = 1;; ++n) {
        if (attempt(n)) co_return n;
        co_await blitz::sleep(wait);
        wait *= 2;
    }
}

blitz::task<int> flaky_call() {
    // The service fails 5 times, then answers.
    auto succeeds_sixth_time = [](int n) { return n >= 6; };
    co_return co_await retry_with_backoff(succeeds_sixth_time);
}

int main() {
    blitz::config c;
    c.start_paused = true;
    blitz::runtime rt(c);
    const auto virtual_start = rt.now();
    const auto wall_start = std::chrono::steady_clock::now();

    auto h = rt.spawn(flaky_call());
    // The test drives the clock: whenever the task is asleep (its timer armed), move time on by
    // a second. An advance that reaches the deadline fires the timer before it returns, so the
    // count of pending timers says exactly when the task is asleep again.
    while (!h.is_finished()) {
        if (rt.metrics().timers_pending == 1) {
            rt.advance(1s);
        } else {
            std::this_thread::yield();  // the task is running: let it reach its next sleep
        }
    }
    const int attempts = h.join();
    const auto virtual_s =
        std::chrono::duration_cast<std::chrono::seconds>(rt.now() - virtual_start).count();
    const auto wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - wall_start)
                             .count();
    std::printf(
        "paused_time: %d attempts over %lld virtual seconds (1+2+4+8+16), in %lld ms of "
        "real time\n",
        attempts, static_cast<long long>(virtual_s), static_cast<long long>(wall_ms));
    const bool ok = attempts == 6 && virtual_s == 31;
    std::puts(ok ? "paused_time: ok" : "paused_time: WRONG");
    return ok ? 0 : 1;
}
