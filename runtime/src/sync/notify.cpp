// SPDX-License-Identifier: MIT
#include "blitz/sync/notify.hpp"

#include <stdexcept>

#include "blitz/detail/faults.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {

bool notify::take_permit() noexcept {
    detail::lock_guard l(mu_);
    if (permits_ == 0) return false;
    --permits_;
    return true;
}

bool notify::enqueue(awaiter& a, detail::task_header* t) {
    detail::lock_guard l(mu_);
    if (permits_ > 0) {  // a notify_one came after await_ready
        --permits_;
        return false;
    }
    a.node_.w = t->make_waker();
    waiters_.push_back(&a.node_);
    return true;
}

void notify::notify_one() {
    detail::wake_batch b;
    {
        detail::lock_guard l(mu_);
        if (detail::wait_node* w = waiters_.front()) {
            static_cast<awaiter*>(w->owner)->by_one_ = true;
            b.complete(w);
        } else if (permits_ == 0 || BLITZ_FAULT(fault_accumulate_)) {
            ++permits_;
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
        } else if (a.by_one_) {
            // Woken by notify_one but destroyed before it resumed: hand the notification on
            // (to the next waiter, or as the stored permit) so it is not lost.
            if (detail::wait_node* w = waiters_.front()) {
                static_cast<awaiter*>(w->owner)->by_one_ = true;
                b.complete(w);
            } else if (permits_ == 0) {
                ++permits_;
            }
        }
    }
    b.flush();
}

unsigned notify::stored_permits() const {
    detail::lock_guard l(mu_);
    return permits_;
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
