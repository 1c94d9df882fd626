// SPDX-License-Identifier: MIT
#pragma once
// ring_mailbox: the cancels other threads hand to a worker ring's owner (worker_rings.hpp,
// protocol 3).

#include <cstdint>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz::detail {

// What other threads ask a worker ring's owner to do on its ring, which only the owner may
// enter (SINGLE_ISSUER): the user_data of operations to cancel. The owner looks at every tick,
// so a look at an empty mailbox must cost no lock: a flag says whether anything was posted.
//
// Protocol:
//   1. A poster adds its entry under the mutex, then sets has_mail (after the mutex is
//      released), then wakes the owner's ring (the caller's part: worker_rings::cancel).
//   2. The owner, at every look and before it sleeps in its ring, reads has_mail; when set it
//      takes the mutex, clears has_mail under it, and takes every entry in one swap.
//
// Invariants:
//  - Every posted entry is taken by the owner exactly once, at the latest at its first look
//    after the poster's wake: the flag is cleared only under the mutex, in the same critical
//    section that empties the mailbox, and a poster sets it only after its entry is in. A
//    stale set flag (its entries taken already) costs one empty take, never an entry.
//
// Memory ordering: the mutex orders the entries. has_mail is stored with release after the
// entry's critical section and loaded with acquire by the owner, so an owner that sees the flag
// then finds the entry under the mutex; the clear is relaxed (under the mutex, and every later
// set is ordered after it by that mutex). The mutex alone would order the entries even with a
// relaxed flag; release and acquire keep the reasoning local. Modelled in
// stress/model/models/ring_mailbox_model.cpp.
//
// Thread-safety: post() from any thread; take() from the owner only.
class ring_mailbox {
public:
    void post(std::uint64_t user_data) {
        // The model's first control: the flag set before the entry is in.
        const bool flag_first = BLITZ_MODEL_DEFECT(mailbox_flag_first);
        if (flag_first) has_mail_.store(true, std::memory_order_release);
        {
            lock_guard l(mu_);
            mail_.push_back(user_data);
        }
        // release: the entry's critical section before the flag
        if (!flag_first) has_mail_.store(true, std::memory_order_release);
    }
    // The owner: every entry posted so far into `out` (whose old contents are dropped); false,
    // without a lock, when nothing was posted since the last take.
    bool take(std::vector<std::uint64_t>& out) {
        out.clear();
        // acquire: pairs with post's release (the mutex orders the entries themselves)
        if (!has_mail_.load(std::memory_order_acquire)) return false;
        // The model's second control: the flag cleared after the mutex is released.
        const bool clear_late = BLITZ_MODEL_DEFECT(mailbox_clear_after_unlock);
        {
            lock_guard l(mu_);
            if (!clear_late) has_mail_.store(false, std::memory_order_relaxed);  // under the mutex
            out.swap(mail_);
        }
        if (clear_late) has_mail_.store(false, std::memory_order_relaxed);
        return true;
    }

private:
    detail::mutex mu_;
    std::vector<std::uint64_t> mail_ BLITZ_GUARDED_BY(mu_);
    atomic<bool> has_mail_{false};
};

}  // namespace blitz::detail
