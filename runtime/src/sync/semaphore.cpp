// SPDX-License-Identifier: MIT
#include "blitz/sync/semaphore.hpp"

#include <stdexcept>
#include <string>

#include "blitz/detail/faults.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {
semaphore::semaphore(std::size_t permits, std::size_t max)
    : semaphore(permits, max, ~queued_bit, 0) {}

namespace {
std::size_t checked_ticket_max(std::size_t max) {
    if (max > semaphore::max_with_tickets) {
        throw std::invalid_argument("blitz::semaphore: a maximum of " + std::to_string(max) +
                                    " permits does not fit beside the tickets (at most " +
                                    std::to_string(semaphore::max_with_tickets) + ")");
    }
    return max;
}
}  // namespace

semaphore::semaphore(std::size_t permits, std::size_t max, with_tickets_t,
                     std::uint32_t first_ticket)
    : semaphore(permits, checked_ticket_max(max), (ticket_one - 1) & ~queued_bit,
                std::size_t{first_ticket} << ticket_shift) {}

semaphore::semaphore(std::size_t permits, std::size_t max, std::size_t count_mask,
                     std::size_t ticket_bits)
    : permits_(permits << 1 | ticket_bits), count_mask_(count_mask), max_(max) {
    if (permits > max) {
        throw std::invalid_argument("blitz::semaphore: " + std::to_string(permits) +
                                    " initial permits exceed the maximum of " +
                                    std::to_string(max));
    }
}

void semaphore::throw_never_granted(std::size_t n) const {
    throw std::invalid_argument("blitz::semaphore::acquire: " + std::to_string(n) +
                                " permits can never be granted (maximum " + std::to_string(max_) +
                                ")");
}

void semaphore::settle_locked(std::size_t n) noexcept {
    std::size_t cur = permits_.load(std::memory_order_relaxed);
    for (;;) {
        // (X2's float_permits control drops the bit too, so floating permits can be taken past
        // the queue, which is the fault it injects.)
        const std::size_t bit =
            waiters_.empty() || BLITZ_FAULT(faults_.float_permits) ? 0 : (cur & queued_bit);
        const std::size_t next = ((cur & ~queued_bit) + (n << 1)) | bit;  // the ticket stays
        // release: pairs with try_take (the permits and what came before them)
        if (permits_.compare_exchange_weak(cur, next, std::memory_order_release,
                                           std::memory_order_relaxed)) {
            return;
        }
    }
}

bool semaphore::enqueue(acquire_awaiter& a, detail::task_header* t) noexcept {
    detail::unique_lock l(mu_);
    if (waiters_.empty()) {
        // Nobody ahead: take what is free now, then raise the queued bit, retrying while
        // lock-free releases keep adding permits.
        std::size_t cur = permits_.load(std::memory_order_acquire);
        while (!(cur & queued_bit)) {
            const std::size_t need = a.n_ - a.held_;
            const std::size_t free = count_of(cur);
            const std::size_t take = free < need ? free : need;
            const bool queue = take == 0;
            if (queue && closed_.load(std::memory_order_relaxed)) break;
            const std::size_t next = queue ? (cur | queued_bit) : cur - (take << 1);
            if (permits_.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
                if (queue) break;
                a.held_ += take;
                if (a.held_ == a.n_) return false;  // got everything: do not suspend
            }
        }
    }
    if (closed_.load(std::memory_order_relaxed) && !grants_outstanding()) {
        const std::size_t back = std::exchange(a.held_, 0);
        a.closed_ = true;
        settle_locked(back);  // queue unchanged; clears a bit raised for nobody
        return false;
    }
    a.node_.w = t->make_waker();
    waiters_.push_back(&a.node_);
    ++queued_;
    return true;
}

detail::wait_node* semaphore::next_waiter() noexcept {
    return BLITZ_FAULT(faults_.lifo) ? waiters_.back()
                                     : waiters_.front();  // the control serves newest first
}

void semaphore::give_locked(std::size_t n, detail::wake_batch& b) noexcept {
    while (n > 0 && !BLITZ_FAULT(faults_.float_permits)) {
        detail::wait_node* w = next_waiter();
        if (!w) break;
        auto* a = static_cast<acquire_awaiter*>(w->owner);
        const std::size_t need = a->n_ - a->held_;
        const std::size_t give = need < n ? need : n;
        a->held_ += give;
        n -= give;
        if (a->held_ == a->n_) {
            --queued_;
            a->queue_granted_ = true;
            granted_waiting_.fetch_add(1, std::memory_order_seq_cst);
            b.complete(w);
            if (b.full()) {
                mu_.unlock();
                b.flush();
                mu_.lock();
            }
        }
    }
    settle_locked(n);  // leftovers to the free count; the queued bit goes with the last waiter
}

void semaphore::release_slow(std::size_t n) {
    if (n == 0) return;
    detail::wake_batch b;
    {
        detail::unique_lock l(mu_);
        if (n > max_ - count_of(permits_.load(std::memory_order_relaxed))) {  // no wrap-around
            throw std::overflow_error("blitz::semaphore::release: " + std::to_string(n) +
                                      " more permits would exceed the maximum of " +
                                      std::to_string(max_));
        }
        give_locked(n, b);
    }
    b.flush();  // wakers run with the lock released
}

void semaphore::abandon(acquire_awaiter& a) noexcept {
    if (a.resumed_) return;
    detail::wake_batch b;
    {
        detail::unique_lock l(mu_);
        if (a.node_.linked()) {
            a.node_.unlink();
            --queued_;
            a.node_.w.reset();
        }
        // Whatever it was granted (partially while queued, or fully before it could resume)
        // goes to the next waiters (and the queued bit goes if it was the last).
        const std::size_t back = std::exchange(a.held_, 0);
        give_locked(BLITZ_FAULT(faults_.lose_abandoned_grant) ? 0 : back, b);
        if (std::exchange(a.queue_granted_, false) && last_grant_gone()) {
            close_waiters_locked(b);  // the last grant came back to nobody: the end now
        }
    }
    b.flush();
}

bool semaphore::last_grant_gone() noexcept {
    return granted_waiting_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
           closed_.load(std::memory_order_seq_cst);
}

void semaphore::grant_taken() noexcept {
    if (last_grant_gone()) {
        detail::wake_batch b;
        detail::unique_lock l(mu_);
        if (!grants_outstanding()) close_waiters_locked(b);
        l.unlock();
        b.flush();
    }
}

void semaphore::close_waiters_locked(detail::wake_batch& b) noexcept {
    // complete_all calls back with mu_ held; the analysis does not follow a lock into a lambda.
    detail::complete_all(waiters_, mu_, b, [&](detail::wait_node* w) BLITZ_NO_TSA noexcept {
        auto* a = static_cast<acquire_awaiter*>(w->owner);
        if (a->held_)
            permits_.fetch_add(std::exchange(a->held_, 0) << 1, std::memory_order_release);
        a->closed_ = true;
        --queued_;
    });
    settle_locked(0);  // the queue is empty: drop the queued bit
}

void semaphore::close() {
    detail::wake_batch b;
    detail::unique_lock l(mu_);
    closed_.store(true, std::memory_order_seq_cst);  // seq_cst: see granted_waiting_
    if (!grants_outstanding()) close_waiters_locked(b);
    l.unlock();
    b.flush();
}

std::size_t semaphore::waiters() const {
    detail::lock_guard l(mu_);
    return queued_;
}

}  // namespace blitz
