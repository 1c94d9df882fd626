// SPDX-License-Identifier: MIT
// Timers: sleep, sleep_until, an interval that keeps its schedule, and what an interval does
// when its task falls behind (burst, delay or skip the missed ticks). Exit status 0 when every
// timer fired no earlier than asked and the intervals ticked on their documented schedules.
//
//   build/release/example_timers

#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

long since(blitz::instant start, blitz::instant t) {
    return std::chrono::duration_cast<ms>(t - start).count();
}

// Ticks `n` times with the task busy for `work` after the first tick, and returns each tick's
// scheduled instant relative to the start, in milliseconds.
blitz::task<std::vector<long>> ticks(blitz::missed_tick_behavior how, int n, ms work) {
    const blitz::instant start = blitz::now();
    blitz::interval iv(start, 20ms, how);
    std::vector<long> at;
    for (int i = 0; i < n; ++i) {
        at.push_back(since(start, co_await iv.tick()));
        if (i == 0) co_await blitz::sleep(work);  // fall behind by 2.5 periods once
    }
    co_return at;
}

void print(const char* name, const std::vector<long>& at) {
    std::printf("  %-6s", name);
    for (long t : at) std::printf(" %4ld", t);
    std::printf("  (ms, scheduled)\n");
}

blitz::task<int> run() {
    int bad = 0;

    // sleep: never earlier than asked (timers have 1 ms resolution, so up to ~1 ms later).
    const blitz::instant t0 = blitz::now();
    co_await blitz::sleep(15ms);
    const long slept = since(t0, blitz::now());
    std::printf("sleep(15ms) took %ld ms\n", slept);
    bad += slept < 15;

    // sleep_until: an absolute deadline; one already passed completes at once.
    co_await blitz::sleep_until(t0);
    co_await blitz::sleep_until(blitz::now() + 5ms);

    // An interval's first tick completes at once; later ticks keep the schedule even though
    // the task's own work between ticks varies.
    std::puts("interval(20ms), 50 ms late after the first tick:");
    const auto burst = co_await ticks(blitz::missed_tick_behavior::burst, 5, 50ms);
    const auto delay = co_await ticks(blitz::missed_tick_behavior::delay, 5, 50ms);
    const auto skip = co_await ticks(blitz::missed_tick_behavior::skip, 5, 50ms);
    print("burst", burst);  // missed ticks fire back to back, on schedule: 0 20 40 60 80
    print("delay", delay);  // the late tick, then one period after each: 0 20 ~70 ~90 ~110
    print("skip", skip);    // the late tick, then the schedule resumes: 0 20 60 80 100
    // What holds however late this machine runs the task (the verdict never rests on timing):
    const std::vector<long> on_schedule{0, 20, 40, 60, 80};
    bad += burst != on_schedule;
    for (std::size_t i = 2; i < delay.size(); ++i) bad += delay[i] - delay[i - 1] < 20;
    bad += skip[0] != 0 || skip[1] != 20 || skip[2] < 60;
    for (std::size_t i = 2; i < skip.size(); ++i)
        bad += skip[i] % 20 != 0 || skip[i] <= skip[i - 1];
    co_return bad;
}

int main() {
    blitz::runtime rt;
    const int bad = rt.block_on(run());
    std::puts(bad == 0 ? "timers: ok" : "timers: WRONG");
    return bad == 0 ? 0 : 1;
}
