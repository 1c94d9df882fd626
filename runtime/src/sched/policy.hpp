// SPDX-License-Identifier: MIT
#pragma once
// Pure scheduling formulas, kept apart from the worker so tests can check them exactly.

#include <algorithm>
#include <cstdint>

namespace blitz::detail {

// Q7: the i-th victim (i in [0, w-1)) of a walk that starts at `start` (uniform in [0, w-1))
// among the workers other than `self`. Every other worker appears exactly once; `self` never.
inline unsigned nth_victim(unsigned self, unsigned start, unsigned i, unsigned w) noexcept {
    return (self + 1 + (start + i) % (w - 1)) % w;
}

// G5: one EWMA step, avg' = alpha * sample + (1 - alpha) * avg (never below 1 ns).
inline double ewma_step(double avg_ns, double sample_ns, double alpha) noexcept {
    return std::max(1.0, alpha * sample_ns + (1.0 - alpha) * avg_ns);
}

// G5: the global-queue interval for an average poll time: clamp(target / avg, lo, hi).
inline unsigned interval_for(double avg_ns, double target_ns, unsigned lo, unsigned hi) noexcept {
    return static_cast<unsigned>(std::clamp(target_ns / avg_ns, double(lo), double(hi)));
}

}  // namespace blitz::detail
