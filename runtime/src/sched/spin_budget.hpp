// SPDX-License-Identifier: MIT
#pragma once
// spin_budget: how long the last searcher spins before it parks (config::park_spin), learnt
// from how long this worker's idle spells last.
//
// A spin pays when work comes back sooner than a futex wake would bring the worker back, and
// costs a CPU (and, under a fair scheduler, the spinner's standing on its next wake) when it
// does not. So, as KVM's halt polling does for a halted vCPU, the budget follows the spells:
//   - a spell that ended with work within the cap, and lasted longer than the budget, is a
//     short miss: a longer spin would have caught that work. The second short miss in a row
//     grows the budget (doubling, from a starting step);
//   - a spell longer than the cap (or one that ended by the park timeout) shrinks it (halving,
//     to 0 below the starting step) and ends the run of short misses: spinning for it would
//     only have burnt the CPU;
//   - a spell the spin itself ended leaves both as they are.
// A runtime whose work comes in bursts far apart spins for nothing after the first few, and
// one fed in short gaps (a plain thread spawning in a loop) learns to spin through them. Two
// misses in a row, not one, keep a worker whose spells alternate short and long (a request,
// then a long wait for its reply) from spinning before every long one: on a machine with no
// CPU to spare that spin costs the next wake its preemption (results/epyc-2c-kvm/park-spin).
// Fixed mode (park_spin_adaptive = false) spins for the cap every time.
// Owner thread only: one per worker, plain fields.

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace blitz::detail {

class spin_budget {
public:
    spin_budget(std::chrono::nanoseconds cap, bool adaptive) noexcept
        : cap_ns_(cap.count()),
          step_ns_(std::min<std::int64_t>(cap.count(), start_step_ns)),
          adaptive_(adaptive),
          budget_ns_(adaptive ? 0 : cap.count()) {}

    // True if spell_ended can move the budget (adaptive, with a spin allowed): only then is
    // an idle spell worth timing.
    bool learns() const noexcept { return adaptive_ && cap_ns_ > 0; }
    // How long to spin at this park (0: park at once).
    std::int64_t budget_ns() const noexcept { return budget_ns_; }

    // An idle spell of `spell_ns` (from going idle to having work again, the spin included)
    // ended: with work (a claim, an I/O event, the final check's find) or not (the park timed
    // out, or the runtime is shutting down; such a spell counts as longer than the cap).
    void spell_ended(std::int64_t spell_ns, bool found_work) noexcept {
        if (!learns()) return;
        if (found_work && spell_ns <= budget_ns_) return;  // the spin caught it
        if (!found_work || spell_ns > cap_ns_) {
            const std::int64_t half = budget_ns_ / 2;
            budget_ns_ = half < step_ns_ ? 0 : half;
            short_misses_ = 0;
        } else if (++short_misses_ >= misses_to_grow) {
            budget_ns_ = std::min(cap_ns_, std::max(step_ns_, budget_ns_ * 2));
        }
    }

    // The first step of a budget that grows from 0 (the cap, if it is shorter).
    static constexpr std::int64_t start_step_ns = 4'000;
    // Short misses in a row (with no long spell between) before the budget grows.
    static constexpr unsigned misses_to_grow = 2;

private:
    const std::int64_t cap_ns_;
    const std::int64_t step_ns_;
    const bool adaptive_;
    std::int64_t budget_ns_;
    unsigned short_misses_ = 0;
};

}  // namespace blitz::detail
