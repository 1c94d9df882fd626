// SPDX-License-Identifier: MIT
#pragma once
// idle_state: who is searching and who is parked, shared by all workers (I1-I3, I6).

#include <cstdint>
#include <memory>
#include <optional>

#include "base/atomic.hpp"
#include "blitz/detail/faults.hpp"

namespace blitz::detail {

// Runtime-wide idle coordination: a searcher count, a parked count and a parked bitmap (bit i
// set iff worker i is parked) of one 64-bit word per 64 workers, with a summary word above them
// when there is more than one (bit k set when word k may have a bit set), so a claim stays O(1)
// up to max_words * 64 workers.
//
// Protocol:
//   1. A producer that made work visible calls should_notify(): true iff nobody is searching and
//      someone is parked. It then claim_parked(): the lowest word the summary names (count
//      trailing zeros), then that word's lowest set bit, cleared atomically; num_parked drops,
//      num_searching rises, and the claimed worker is unparked as a searcher (I2, I3). A
//      claimer that finds a named word empty clears the word's summary bit, then looks at the
//      word again and sets the bit back if a parker filled it meanwhile.
//   2. A searcher that starts running a task calls transition_from_searching(); if it was the
//      last searcher it must wake another parked worker (I4).
//   3. A worker about to sleep calls mark_parked(); if it was the last searcher it must check
//      every queue once more before sleeping (I4), and any other worker the global queue (a
//      producer may have read the count before the commit, or the bitmap between its two
//      steps, and woken nobody). If that look finds work, the worker unmarks itself and searches
//      again (try_become_searcher), so the work it takes leads to a wake for the rest.
//   4. A worker that wakes calls unmark_parked(): if its bit is still set it woke by timeout
//      (it clears the bit and is not a searcher); otherwise a claimer cleared it (searcher, I6).
//
// Invariants: num_parked == popcount(bitmap) whenever no transition is in flight; a word with a
// bit set has its summary bit set whenever no transition is in flight (a parker sets its word's
// bit before the summary's, and a claimer clears a summary bit before its second look at the
// word); searching rises above workers / 2 only through the racy check in try_become_searcher
// (counted in overshoots()).
// Memory ordering: all RMWs are seq_cst. A producer's push is followed by a seq_cst RMW on
// num_searching_ (should_notify), or by a seq_cst load of it when the push was itself a seq_cst
// RMW (the global queue's length); a parking searcher's decrement of num_searching_ is a seq_cst
// RMW on the same word followed by its queue checks, so either the producer sees the searcher or
// the searcher's check sees the push (the Dekker pattern, without standalone fences).
// Thread-safety: every method from any thread.
// Deliberate faults for the conformance negative controls (I2, I3); the runtime sets them only
// from config::debug.
struct idle_faults {
    bool claim_highest = false;     // claim the highest set bit instead of the lowest
    bool ignore_searchers = false;  // should_notify() ignores existing searchers
};

class idle_state {
public:
    // The widest runtime it can coordinate: one summary word of 64 words of 64 workers.
    static constexpr unsigned max_words = 64;
    static constexpr unsigned max_workers = max_words * 64;

    // `workers` in [1, max_workers].
    idle_state(unsigned workers, bool limit_searchers, idle_faults f = {});

    // I1: the searcher gate. `gate_seen` is the count the gate compared with the cap (the
    // increment's result when the cap is off), `prev` the count the increment found.
    struct admission {
        bool admitted = false;
        unsigned gate_seen = 0;
        unsigned prev = 0;
    };
    admission try_become_searcher() noexcept;
    // Returns true if the caller was the last searcher.
    bool transition_from_searching() noexcept;

    // Sets worker i's bit; `was_searcher` also drops the searcher count. Returns true if the
    // caller was the last searcher (and must do the final check).
    bool mark_parked(unsigned i, bool was_searcher) noexcept;
    // After waking: clears i's bit if still set and returns true (timeout wake, not a searcher);
    // returns false if a claimer had cleared it (the worker is now a searcher).
    bool unmark_parked(unsigned i) noexcept;

    // `searching_seen`, if given, receives the searcher count the decision read (I3).
    // `pushed_by_rmw`: the caller published its work with a seq_cst RMW (the global queue's
    // push), so the count is read with a seq_cst load instead of a seq_cst RMW.
    bool should_notify(unsigned* searching_seen = nullptr, bool pushed_by_rmw = false) noexcept;
    struct claim {
        unsigned index;             // the worker claimed (its bit is now clear)
        std::uint64_t chosen_from;  // the bitmap word the index was chosen from (word index / 64;
                                    // I2: index % 64 = ctz)
    };
    std::optional<claim> claim_parked() noexcept;

    unsigned num_searching() const noexcept { return searching_.load(std::memory_order_seq_cst); }
    unsigned num_parked() const noexcept { return parked_.load(std::memory_order_seq_cst); }
    // A racy read of the parked count with no ordering: only for wakes that are a matter of
    // parallelism, never of progress (scheduler::notify_parked_for_local).
    unsigned parked_hint() const noexcept { return parked_.load(std::memory_order_relaxed); }
    // The same kind of racy read: some worker searches (for the same wakes; always false under
    // the ignore_searchers control, which should_notify's callers then reach as before).
    bool searcher_hint() const noexcept {
        return searching_.load(std::memory_order_relaxed) != 0 &&
               !BLITZ_FAULT(faults_.ignore_searchers);
    }
    // Word k of the bitmap: the parked bits of workers 64k .. 64k + 63.
    std::uint64_t bitmap_word(unsigned k) const noexcept {
        return words_[k].load(std::memory_order_seq_cst);
    }
    // The word that holds worker i's bit.
    std::uint64_t bitmap_of(unsigned i) const noexcept { return bitmap_word(i / 64); }
    unsigned bitmap_words() const noexcept { return nwords_; }
    // Bit k: word k may have a bit set (always 1 with one word).
    std::uint64_t summary() const noexcept {
        return nwords_ == 1 ? 1 : summary_.load(std::memory_order_seq_cst);
    }
    unsigned workers() const noexcept { return workers_; }
    // Times a searcher started although 2 * searching >= workers (the racy excess, I1).
    std::uint64_t overshoots() const noexcept {
        return overshoots_.load(std::memory_order_relaxed);
    }
    std::uint64_t claims() const noexcept { return claims_.load(std::memory_order_relaxed); }

private:
    // Claims the lowest set bit of word k (the fault: the highest); nullopt when it is empty.
    std::optional<claim> claim_in(unsigned k) noexcept;

    const unsigned workers_;
    const unsigned nwords_;
    const bool limit_searchers_;
    const idle_faults faults_;
    alignas(cache_line) atomic<unsigned> searching_{0};
    atomic<unsigned> parked_{0};
    // With one word the summary is not kept (claims read word 0 directly), so runtimes of up
    // to 64 workers make the same RMWs as a single-word bitmap.
    atomic<std::uint64_t> summary_{0};
    const std::unique_ptr<atomic<std::uint64_t>[]> words_;
    alignas(cache_line) atomic<std::uint64_t> overshoots_{0};
    atomic<std::uint64_t> claims_{0};
};

}  // namespace blitz::detail
