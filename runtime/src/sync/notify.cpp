// SPDX-License-Identifier: MIT
#include "blitz/sync/notify.hpp"

#include <stdexcept>

#include "blitz/detail/faults.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {

bool notify::take_permit() noexcept {
    unsigned s = state_.load(std::memory_order_relaxed);  // relaxed: the CAS checks it
    while (s >= permit_unit) {
        if (state_.compare_exchange_weak(s, s - permit_unit, std::memory_order_acquire,
                                         std::memory_order_relaxed))
            return true;
    }
    return false;
}

unsigned notify::with_permit(unsigned s) const noexcept {
    // With one stored, the caller's CAS only confirms it is still there: a load alone may read a
    // permit a waiter already took, and the notification would be lost.
    return s >= permit_unit && !BLITZ_FAULT(fault_accumulate_) ? s : s + permit_unit;
}

bool notify::add_permit() noexcept {
    unsigned s = state_.load(std::memory_order_relaxed);  // relaxed: the CAS checks it
    for (;;) {
        if (s & waiters_bit) return false;
        if (state_.compare_exchange_weak(s, with_permit(s),
                                         BLITZ_ORDER(notify_add_permit, std::memory_order_release),
                                         std::memory_order_relaxed))
            return true;
    }
}

void notify::store_permit_locked() noexcept {
    unsigned s = state_.load(std::memory_order_relaxed);  // relaxed: the CAS checks it
    while (!state_.compare_exchange_weak(s, with_permit(s), std::memory_order_release,
                                         std::memory_order_relaxed)) {
    }
}

void notify::waiters_changed_locked() noexcept {
    // relaxed: the bit is only read to choose the lock, whose acquisition orders the list
    if (waiters_.empty()) state_.fetch_and(~waiters_bit, std::memory_order_relaxed);
}

bool notify::enqueue(awaiter& a, detail::task_header* t) {
    detail::lock_guard l(mu_);
    unsigned s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (s >= permit_unit && !BLITZ_MODEL_DEFECT(notify_enqueue_ignores_permit)) {
            // a notify_one came after await_ready: take it, do not wait
            if (state_.compare_exchange_weak(s, s - permit_unit, std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return false;
        } else if ((s & waiters_bit) != 0 ||
                   state_.compare_exchange_weak(s, s | waiters_bit, std::memory_order_relaxed,
                                                std::memory_order_relaxed)) {
            break;  // from here a notify_one takes the lock and finds us in the list
        }
    }
    a.node_.w = t->make_waker();
    waiters_.push_back(&a.node_);
    return true;
}

void notify::notify_one() {
    if (add_permit()) return;  // nobody waits: no lock
    detail::wake_batch b;
    {
        detail::lock_guard l(mu_);
        if (detail::wait_node* w = waiters_.front()) {
            static_cast<awaiter*>(w->owner)->by_one_ = true;
            b.complete(w);
            waiters_changed_locked();
        } else {
            store_permit_locked();  // the waiters left meanwhile
        }
    }
    b.flush();
}

void notify::notify_all() {
    detail::wake_batch b;
    detail::unique_lock l(mu_);
    // Only the tasks waiting now; one that waits again while a full batch is flushed is not
    // woken by this call.
    detail::wake_all(waiters_, mu_, b);
    waiters_changed_locked();
    l.unlock();
    b.flush();
}

void notify::abandon(awaiter& a) noexcept {
    if (a.resumed_) return;
    detail::wake_batch b;
    {
        detail::lock_guard l(mu_);
        if (a.node_.linked()) {
            a.node_.unlink();
            a.node_.w.reset();
            waiters_changed_locked();
        } else if (a.by_one_) {
            // Woken by notify_one but destroyed before it resumed: hand the notification on
            // (to the next waiter, or as the stored permit) so it is not lost.
            if (detail::wait_node* w = waiters_.front()) {
                static_cast<awaiter*>(w->owner)->by_one_ = true;
                b.complete(w);
                waiters_changed_locked();
            } else {
                store_permit_locked();
            }
        }
    }
    b.flush();
}

unsigned notify::stored_permits() const {
    return state_.load(std::memory_order_acquire) / permit_unit;
}

barrier::barrier(std::size_t n) : n_(n) {
    if (n == 0) throw std::invalid_argument("blitz::barrier: needs at least one party");
}

bool barrier::arrive(awaiter& a, detail::task_header* t) {
    detail::wake_batch b;
    detail::unique_lock l(mu_);
    a.generation_ = generation_.load(std::memory_order_relaxed);  // written only under mu_ here
    if (++arrived_ < n_) {
        a.node_.w = t->make_waker();
        waiters_.push_back(&a.node_);
        return true;
    }
    // The last arrival: it leads, and releases its whole generation at once.
    a.leader_ = true;
    arrived_ = 0;
    // release: pairs with generation()'s acquire
    generation_.store(a.generation_ + 1, std::memory_order_release);
    detail::complete_all(waiters_, mu_, b, [&](detail::wait_node* w) noexcept {
        if (BLITZ_FAULT(fault_all_lead_)) static_cast<awaiter*>(w->owner)->leader_ = true;
    });
    a.node_.done.store(true, std::memory_order_release);
    l.unlock();
    b.flush();
    return false;
}

void barrier::abandon(awaiter& a) noexcept {
    detail::lock_guard l(mu_);
    if (a.node_.linked()) {
        a.node_.unlink();
        a.node_.w.reset();
        // Still waiting in the current generation: it never passed, so the generation needs
        // another arrival. (A node of a generation being released is only unlinked.)
        if (a.generation_ == generation_.load(std::memory_order_relaxed)) --arrived_;
    }
}

std::size_t barrier::generation() const {
    return generation_.load(std::memory_order_acquire);  // pairs with the release raising it
}

}  // namespace blitz
