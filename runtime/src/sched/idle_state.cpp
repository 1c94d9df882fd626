// SPDX-License-Identifier: MIT
#include "sched/idle_state.hpp"

#include <algorithm>
#include <bit>

#include "blitz/detail/faults.hpp"

namespace blitz::detail {

namespace {
constexpr std::uint64_t bit_of(unsigned i) noexcept { return std::uint64_t{1} << (i % 64); }
}  // namespace

idle_state::idle_state(unsigned workers, bool limit_searchers, idle_faults f)
    : workers_(workers),
      nwords_(std::max(1u, (workers + 63) / 64)),
      limit_searchers_(limit_searchers),
      faults_(f),
      words_(new atomic<std::uint64_t>[nwords_]) {
    for (unsigned k = 0; k < nwords_; ++k) words_[k].store(0, std::memory_order_relaxed);
}

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
    // already includes us. The word's bit before the summary's: a claimer that clears the summary
    // bit looks at the word again afterwards, so it sees our bit or we set the summary after it.
    parked_.fetch_add(1, std::memory_order_seq_cst);
    const std::uint64_t kbit = std::uint64_t{1} << (i / 64);
    // The model's control sets the summary bit first.
    const bool summary_first = BLITZ_MODEL_DEFECT(summary_before_word) && nwords_ > 1;
    if (summary_first) summary_.fetch_or(kbit, std::memory_order_seq_cst);
    words_[i / 64].fetch_or(bit_of(i), std::memory_order_seq_cst);
    if (nwords_ > 1 && !summary_first) summary_.fetch_or(kbit, std::memory_order_seq_cst);
    return was_searcher && transition_from_searching();
}

bool idle_state::unmark_parked(unsigned i) noexcept {
    // The summary bit stays: it only says the word may have a bit set, and the next claimer
    // that finds the word empty clears it.
    const std::uint64_t bit = bit_of(i);
    if ((words_[i / 64].fetch_and(~bit, std::memory_order_seq_cst) & bit) == 0) return false;
    parked_.fetch_sub(1, std::memory_order_seq_cst);
    return true;
}

bool idle_state::should_notify(unsigned* searching_seen, bool pushed_by_rmw) noexcept {
    // After a push that was not itself a seq_cst RMW (a worker's ring), a seq_cst RMW, not a
    // load, orders the push before this read (see the class comment). After a seq_cst RMW push
    // (the global queue's length) a seq_cst load is enough: both RMWs and both reads are in the
    // single seq_cst order, so this load or the searcher's queue check sees the other's write
    // (if both missed, S would hold push < this load < the searcher's decrement < its check <
    // push: a cycle). The parked count below was already read this way.
    // That keeps a write to this contended line off every spawn from outside the workers.
    const unsigned searching = pushed_by_rmw ? searching_.load(std::memory_order_seq_cst)
                                             : searching_.fetch_add(0, std::memory_order_seq_cst);
    if (searching_seen) *searching_seen = searching;
    if (searching != 0 && !BLITZ_FAULT(faults_.ignore_searchers)) return false;
    return parked_.load(std::memory_order_seq_cst) != 0;
}

std::optional<idle_state::claim> idle_state::claim_in(unsigned k) noexcept {
    atomic<std::uint64_t>& word = words_[k];
    std::uint64_t bm = word.load(std::memory_order_seq_cst);
    while (bm != 0) {
        const unsigned i = BLITZ_FAULT(faults_.claim_highest)
                               ? 63u - static_cast<unsigned>(std::countl_zero(bm))
                               : static_cast<unsigned>(std::countr_zero(bm));
        const std::uint64_t bit = std::uint64_t{1} << i;
        const std::uint64_t prev = word.fetch_and(~bit, std::memory_order_seq_cst);
        if (prev & bit) {
            parked_.fetch_sub(1, std::memory_order_seq_cst);
            searching_.fetch_add(1, std::memory_order_seq_cst);
            claims_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
            return claim{k * 64 + i, bm};
        }
        bm = prev & ~bit;  // someone else took bit i; try the next lowest
    }
    return std::nullopt;
}

std::optional<idle_state::claim> idle_state::claim_parked() noexcept {
    if (nwords_ == 1) return claim_in(0);
    std::uint64_t sum = summary_.load(std::memory_order_seq_cst);
    while (sum != 0) {
        const unsigned k = static_cast<unsigned>(std::countr_zero(sum));
        if (auto c = claim_in(k)) return c;
        // Word k is empty (or was emptied under us): clear its summary bit, then look again. A
        // parker that set a bit in the word before our clear has its bit seen here; one after
        // it sets the summary bit after our clear.
        const std::uint64_t kbit = std::uint64_t{1} << k;
        summary_.fetch_and(~kbit, std::memory_order_seq_cst);
        if (!BLITZ_MODEL_DEFECT(summary_skips_second_look) &&
            words_[k].load(std::memory_order_seq_cst) != 0) {
            summary_.fetch_or(kbit, std::memory_order_seq_cst);
        }
        sum = summary_.load(std::memory_order_seq_cst);
    }
    return std::nullopt;
}

}  // namespace blitz::detail
