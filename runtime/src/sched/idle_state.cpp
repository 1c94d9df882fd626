// SPDX-License-Identifier: MIT
#include "sched/idle_state.hpp"

#include <bit>

#include "blitz/detail/faults.hpp"

namespace blitz::detail {

idle_state::admission idle_state::try_become_searcher() noexcept {
    admission a;
    if (limit_searchers_) {
        a.gate_seen = searching_.load(std::memory_order_seq_cst);
        // The model's I1 control lets one searcher too many through (> for >=).
        const unsigned cap_at =
            BLITZ_MODEL_DEFECT(searcher_gate_off_by_one) ? workers_ + 1 : workers_;
        if (2 * a.gate_seen >= cap_at) return a;
    }
    a.admitted = true;
    a.prev = searching_.fetch_add(1, std::memory_order_seq_cst);
    if (!limit_searchers_) a.gate_seen = a.prev;
    if (limit_searchers_ && 2 * a.prev >= workers_) {
        overshoots_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    }
    return a;
}

bool idle_state::transition_from_searching() noexcept {
    return searching_.fetch_sub(1, std::memory_order_seq_cst) == 1;
}

bool idle_state::mark_parked(unsigned i, bool was_searcher) noexcept {
    // Count first, then the bit: a claimer that finds the bit always decrements a count that
    // already includes us.
    parked_.fetch_add(1, std::memory_order_seq_cst);
    bitmap_.fetch_or(std::uint64_t{1} << i, std::memory_order_seq_cst);
    return was_searcher && transition_from_searching();
}

bool idle_state::unmark_parked(unsigned i) noexcept {
    const std::uint64_t bit = std::uint64_t{1} << i;
    if ((bitmap_.fetch_and(~bit, std::memory_order_seq_cst) & bit) == 0) return false;
    parked_.fetch_sub(1, std::memory_order_seq_cst);
    return true;
}

bool idle_state::should_notify(unsigned* searching_seen) noexcept {
    // A seq_cst RMW, not a load: it orders the caller's preceding push before this read (see the
    // class comment).
    const unsigned searching = searching_.fetch_add(0, std::memory_order_seq_cst);
    if (searching_seen) *searching_seen = searching;
    if (searching != 0 && !BLITZ_FAULT(faults_.ignore_searchers)) return false;
    return parked_.load(std::memory_order_seq_cst) != 0;
}

std::optional<idle_state::claim> idle_state::claim_parked() noexcept {
    std::uint64_t bm = bitmap_.load(std::memory_order_seq_cst);
    while (bm != 0) {
        const unsigned i = BLITZ_FAULT(faults_.claim_highest)
                               ? 63u - static_cast<unsigned>(std::countl_zero(bm))
                               : static_cast<unsigned>(std::countr_zero(bm));
        const std::uint64_t bit = std::uint64_t{1} << i;
        const std::uint64_t prev = bitmap_.fetch_and(~bit, std::memory_order_seq_cst);
        if (prev & bit) {
            parked_.fetch_sub(1, std::memory_order_seq_cst);
            searching_.fetch_add(1, std::memory_order_seq_cst);
            claims_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
            return claim{i, bm};
        }
        bm = prev & ~bit;  // someone else took bit i; try the next lowest
    }
    return std::nullopt;
}

}  // namespace blitz::detail
