// SPDX-License-Identifier: MIT
#pragma once
// cycle_clock: the scheduler's cheap clock for its own bookkeeping.

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace blitz::detail {

// A clock for what a worker measures on its own: the tick's duration behind the poll-time
// average (G5) and the time bound on the periodic global check (G8), read at every tick and
// every 8 polls. With an invariant TSC (x86-64, CPUID 0x80000007 EDX bit 8) that the kernel
// trusts too (its clocksource is the TSC, so it found the CPUs' counters in step), it reads the
// time stamp counter and scales it by a rate measured once per process against steady_clock: rdtsc
// costs about 10 ns on the development VM, clock_gettime through the vDSO about 24 ns, and at
// 8 polls a reading that was about 8% of a chained spawn. Without one it is steady_clock.
//
// Readings are nanoseconds from an arbitrary origin; only differences between readings of one
// process mean anything. A thread that moves between CPUs whose counters disagree may see a
// difference below zero; since() and the callers clamp it at 0 (G5's average and G8's bound
// only err by the skew).
// Thread-safety: a cycle_clock is a value; copies are read from any thread.
class cycle_clock {
public:
    // The process's clock: the TSC when invariant, trusted by the kernel, and its rate looks
    // sane; else steady_clock.
    static cycle_clock process() noexcept;
    // The steady_clock fallback, whatever the CPU (tests, and where the TSC is not trusted).
    static cycle_clock steady() noexcept { return cycle_clock(); }

    bool uses_tsc() const noexcept { return tsc_; }
    double ns_per_tick() const noexcept { return ns_per_tick_; }

    std::int64_t now() const noexcept {
#if defined(__x86_64__)
        if (tsc_) {
            // Signed: a CPU whose counter is a little behind the origin's reads below 0.
            const auto ticks = static_cast<std::int64_t>(__rdtsc() - origin_);
            return static_cast<std::int64_t>(static_cast<double>(ticks) * ns_per_tick_);
        }
#endif
        return steady_ns();
    }
    // steady_clock's reading in nanoseconds (the fallback's, and calibration's reference).
    static std::int64_t steady_ns() noexcept {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    // Nanoseconds from `earlier` to `later`, never below 0.
    static std::uint64_t since(std::int64_t earlier, std::int64_t later) noexcept {
        return later > earlier ? static_cast<std::uint64_t>(later - earlier) : 0;
    }

    // Measures the TSC's rate against steady_clock over `window` (the process clock uses
    // 500 us). The result falls back to steady_clock when the CPU has no invariant TSC or the
    // rate is outside 0.01-10 ns a tick (0.1-100 GHz).
    static cycle_clock calibrate(std::chrono::nanoseconds window) noexcept;
    // Whether this CPU says its TSC runs at a constant rate in every state.
    static bool invariant_tsc() noexcept;
    // Whether the kernel keeps time with the TSC (Linux's current clocksource is "tsc").
    static bool kernel_trusts_tsc() noexcept;

private:
    cycle_clock() noexcept = default;

    bool tsc_ = false;
    double ns_per_tick_ = 1.0;
    std::uint64_t origin_ = 0;  // the TSC at calibration: keeps the products small
};

}  // namespace blitz::detail
