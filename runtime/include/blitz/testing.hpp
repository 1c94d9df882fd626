// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::testing: the negative controls of the conformance suite, for the suite, the stress
// tests and the unit tests only. Each switch breaks one invariant of docs/INVARIANTS.md on
// purpose so that its checker is seen to fail. Available in the faults build of the runtime
// (link blitz::runtime_faults, which defines BLITZ_FAULTS=1); the library users link has none
// of them. The runtime-wide switches are config::debug (testing::runtime_faults).

#include <mutex>

#include "blitz/chan/broadcast.hpp"
#include "blitz/chan/channel.hpp"
#include "blitz/chan/watch.hpp"
#include "blitz/config.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/sync/notify.hpp"
#include "blitz/sync/semaphore.hpp"
#include "blitz/testing/runtime_faults.hpp"

namespace blitz::testing {

// The one friend of every type with a fault switch.
struct access {
    static void set_accumulate(notify& n, bool on) noexcept { n.fault_accumulate_ = on; }
    static void set_all_lead(barrier& b, bool on) noexcept { b.fault_all_lead_ = on; }
    static void set_faults(semaphore& s, semaphore_faults f) noexcept { s.faults_ = f; }
    template <class T>
    static void set_drop_waiting_send(sender<T>& tx, bool on) noexcept {
        tx.s_->fault_drop_waiting_send = on;
    }
    template <class T>
    static void set_drop_closed_send(sender<T>& tx, bool on) noexcept {
        tx.s_->fault_drop_closed_send = on;
    }
    template <class T>
    static void set_lose_abandoned_grant(receiver<T>& rx, bool on) {
        semaphore_faults f;
        f.lose_abandoned_grant = on;
        set_faults(rx.checked().ready_values(), f);
    }
    template <class T>
    static void set_hide_lag(broadcast_sender<T>& tx, bool on) {
        detail::lock_guard l(tx.s_->mu);
        tx.s_->fault_hide_lag = on;
    }
    template <class T>
    static void set_skip_last(watch_sender<T>& tx, bool on) {
        detail::lock_guard l(tx.s_->mu);
        tx.s_->fault_skip_last = on;
    }
};

// X4: notify_one with nobody waiting adds a permit each time (permits accumulate).
inline void set_fault_accumulate(notify& n, bool on) noexcept { access::set_accumulate(n, on); }
// X4: every arrival of a completing barrier generation is told it leads.
inline void set_fault_all_lead(barrier& b, bool on) noexcept { access::set_all_lead(b, on); }
// X2 and X5: see semaphore_faults. Set before the semaphore is shared.
inline void set_faults(semaphore& s, semaphore_faults f) noexcept { access::set_faults(s, f); }
// X5: a send that had to wait reports success without delivering.
template <class T>
void set_fault_drop_waiting_send(sender<T>& tx, bool on) noexcept {
    access::set_drop_waiting_send(tx, on);
}
// X5: a send that was waiting for room when the last receiver went reports success and drops
// its value instead of handing it back.
template <class T>
void set_fault_drop_closed_send(sender<T>& tx, bool on) noexcept {
    access::set_drop_closed_send(tx, on);
}
// X5: a value granted to a receiver that is then dropped (aborted, timed out, lost a select) is
// not handed on; it stays unreachable in the buffer.
template <class T>
void set_fault_lose_abandoned_grant(receiver<T>& rx, bool on) {
    access::set_lose_abandoned_grant(rx, on);
}
// X6: lagging broadcast receivers skip the lost values without reporting the lag.
template <class T>
void set_fault_hide_lag(broadcast_sender<T>& tx, bool on) {
    access::set_hide_lag(tx, on);
}
// X6: the watch sender's going wakes nobody, so a watcher waiting for the last change sleeps
// through it.
template <class T>
void set_fault_skip_last(watch_sender<T>& tx, bool on) {
    access::set_skip_last(tx, on);
}

}  // namespace blitz::testing
