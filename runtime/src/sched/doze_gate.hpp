// SPDX-License-Identifier: MIT
#pragma once
// doze_gate: how the stall detector's watchdog dozes while every worker is parked without
// missing the first poll after (issue 46).

#include "blitz/detail/atomic.hpp"

namespace blitz::detail {

// The watchdog's doze flag, against the workers' parked bits.
//
// Protocol:
//   1. The watchdog, after a sample that saw every worker parked, publishes `dozing` and reads
//      the parked bits again (try_doze): still all parked, it dozes (waits a whole threshold);
//      otherwise it withdraws the flag.
//   2. A worker that leaves its park clears its parked bit (a seq_cst RMW in idle_state) and,
//      at the end of its park (before its next poll), takes the flag (wake): true means the
//      watchdog was dozing and this worker must wake it.
// Invariants: a watchdog never dozes through a worker's poll unwoken: either its second read
// sees the worker's bit cleared (and it does not doze), or the worker's take sees the flag (and
// wakes it). At most one taker wins the flag per doze.
// Memory ordering: the flag's publication and the worker's take are seq_cst, as are the parked
// bits' clear and the watchdog's re-read: of the two store-then-read pairs, one sees the
// other's store (the store-buffering case both orders rule out).
// Thread-safety: try_doze and withdraw on the watchdog's thread; wake and dozing any thread.
class doze_gate {
public:
    template <class AllParked>
    bool try_doze(AllParked all_parked) noexcept {
        // (The model's doze_no_recheck control trusts the sample's look and skips the second.)
        dozing_.store(true, BLITZ_ORDER(doze_publish, std::memory_order_seq_cst));
        if (BLITZ_MODEL_DEFECT(doze_no_recheck) || all_parked()) return true;
        dozing_.store(false, std::memory_order_relaxed);  // only the watchdog sets it
        return false;
    }
    // The watchdog, waking from its wait for any reason: no longer dozing.
    void withdraw() noexcept { dozing_.store(false, std::memory_order_relaxed); }
    bool dozing() const noexcept { return dozing_.load(std::memory_order_seq_cst); }
    bool wake() noexcept {
        return dozing_.exchange(false, BLITZ_ORDER(doze_take, std::memory_order_seq_cst));
    }

private:
    atomic<bool> dozing_{false};
};

}  // namespace blitz::detail
