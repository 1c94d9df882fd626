// SPDX-License-Identifier: MIT
// Micro-benchmarks of the timer wheel and driver: what arming and cancelling a timer costs.

#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "time/timer_driver.hpp"
#include "time/timer_wheel.hpp"

namespace {

using namespace std::chrono_literals;
using blitz::detail::timer_driver;
using blitz::detail::timer_entry;
using blitz::detail::timer_slot;
using blitz::detail::timer_wheel;

// Insert then cancel one entry, with `range(0)` other timers already in the wheel (spread over
// the levels), deadline at a varying offset up to ~4.7 h.
void BM_wheel_insert_cancel(benchmark::State& st) {
    timer_wheel w;
    std::vector<timer_entry> background(static_cast<std::size_t>(st.range(0)));
    std::uint64_t x = 12345;
    for (auto& e : background) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        e.deadline = 1 + (x >> 40) % (64ull * 64 * 64 * 64);
        w.insert(&e);
    }
    timer_entry e;
    std::uint64_t i = 0;
    for (auto _ : st) {
        e.deadline = 1 + (++i * 7919) % (64ull * 64 * 64 * 64);
        w.insert(&e);
        w.remove(&e);
    }
}
BENCHMARK(BM_wheel_insert_cancel)->Arg(0)->Arg(10'000);

// The same through the runtime's driver: lock, tick conversion, waker move.
void BM_driver_arm_disarm(benchmark::State& st) {
    timer_driver drv(/*paused=*/true);
    timer_slot s;
    const auto t0 = drv.now();
    std::uint64_t i = 0;
    for (auto _ : st) {
        const auto ms = 1 + (++i * 7919) % 100'000;
        drv.arm(s, t0 + std::chrono::milliseconds(ms), blitz::waker());
        drv.disarm(s);
    }
}
BENCHMARK(BM_driver_arm_disarm);

}  // namespace
