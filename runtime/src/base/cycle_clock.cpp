// SPDX-License-Identifier: MIT
#include "base/cycle_clock.hpp"

#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace blitz::detail {

namespace {

#if defined(__x86_64__)
// A TSC reading and the steady_clock time it was taken at: the middle of the tightest of a few
// bracketing pairs of steady_clock reads (a preemption inside a pair only loses that pair).
struct paired_reading {
    std::uint64_t tsc = 0;
    std::int64_t ns = 0;
};

paired_reading pair_up() noexcept {
    paired_reading best;
    std::int64_t best_gap = -1;
    for (int i = 0; i < 5; ++i) {
        const std::int64_t before = cycle_clock::steady_ns();
        const std::uint64_t tsc = __rdtsc();
        const std::int64_t after = cycle_clock::steady_ns();
        if (best_gap < 0 || after - before < best_gap) {
            best_gap = after - before;
            best = {tsc, before + (after - before) / 2};
        }
    }
    return best;
}
#endif

}  // namespace

bool cycle_clock::invariant_tsc() noexcept {
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
    __cpuid(0x80000007u, a, b, c, d);
    return (d & (1u << 8)) != 0;
#else
    return false;
#endif
}

bool cycle_clock::kernel_trusts_tsc() noexcept {
    try {
        std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
        std::string name;
        return static_cast<bool>(f >> name) && name == "tsc";
    } catch (...) {
        return false;
    }
}

cycle_clock cycle_clock::calibrate(std::chrono::nanoseconds window) noexcept {
    cycle_clock c;
#if defined(__x86_64__)
    if (!invariant_tsc()) return c;
    const paired_reading first = pair_up();
    const std::int64_t until = first.ns + window.count();
    while (cycle_clock::steady_ns() < until) {
    }
    const paired_reading second = pair_up();
    if (second.tsc <= first.tsc || second.ns <= first.ns) return c;
    const double rate =
        static_cast<double>(second.ns - first.ns) / static_cast<double>(second.tsc - first.tsc);
    if (!(rate > 0.01 && rate < 10.0)) return c;
    c.tsc_ = true;
    c.ns_per_tick_ = rate;
    c.origin_ = first.tsc;
#else
    (void)window;
#endif
    return c;
}

cycle_clock cycle_clock::process() noexcept {
    // Measured once, by the first runtime's construction (a thread-safe static).
    static const cycle_clock clock =
        kernel_trusts_tsc() ? calibrate(std::chrono::microseconds(500)) : steady();
    return clock;
}

}  // namespace blitz::detail
