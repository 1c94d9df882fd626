// SPDX-License-Identifier: MIT
#include "time/timer_driver.hpp"

#include <algorithm>
#include <stdexcept>

#include "blitz/detail/faults.hpp"

namespace blitz::detail {
namespace {
constexpr std::uint64_t max_tick = std::uint64_t{1} << 62;  // far past any real deadline
}

timer_driver::timer_driver(bool paused, early_fault early)
    : paused_(paused), early_(early), origin_(clock::now()) {}

timer_driver::clock::time_point timer_driver::now() const noexcept {
    if (!paused_) return clock::now();
    // acquire: pairs with the release in advance(), so a task woken by it sees the new time
    return origin_ + duration(virtual_offset_ns_.load(std::memory_order_acquire));
}

std::uint64_t timer_driver::deadline_tick(clock::time_point t) const noexcept {
    if (t <= origin_) return 0;
    const auto d = std::chrono::duration_cast<duration>(t - origin_);
    const std::uint64_t whole = static_cast<std::uint64_t>(d / tick);
    const std::uint64_t up = whole + (d % tick != duration::zero() ? 1 : 0);  // never early
    if (BLITZ_FAULT(early_ == early_fault::one_tick) && up > 0) return std::min(up - 1, max_tick);
    if (BLITZ_FAULT(early_ == early_fault::half_wait)) {
        const std::uint64_t at = now_tick();
        if (up > at) return std::min(at + (up - at + 1) / 2, max_tick);
    }
    return std::min(up, max_tick);
}

std::uint64_t timer_driver::now_tick() const noexcept {
    const auto d = std::chrono::duration_cast<duration>(now() - origin_);
    return d <= duration::zero() ? 0 : static_cast<std::uint64_t>(d / tick);
}

void timer_driver::publish_next() noexcept {
    const std::uint64_t next = pending_ ? 0 : wheel_.next_expiration().value_or(UINT64_MAX);
    next_tick_.store(next, std::memory_order_seq_cst);  // seq_cst: see the class comment
}

bool timer_driver::arm(timer_slot& s, clock::time_point deadline, waker w) {
    std::uint64_t moved_to = UINT64_MAX;
    {
        lock_guard l(mu_);
        s.deadline = deadline_tick(deadline);
        s.fired.store(false, std::memory_order_relaxed);  // relaxed: the slot is not shared yet
        if (!wheel_.insert(&s)) return false;             // already due: the caller proceeds
        s.w = std::move(w);
        const std::uint64_t before = next_tick_.load(std::memory_order_relaxed);  // ours: locked
        publish_next();
        const std::uint64_t after = next_tick_.load(std::memory_order_relaxed);
        if (after < before) moved_to = after;
    }
    if (moved_to != UINT64_MAX && listener_ && !paused_) {
        listener_->expiry_moved_earlier(origin_ + tick * static_cast<std::int64_t>(moved_to));
    }
    return true;
}

bool timer_driver::disarm(timer_slot& s) noexcept {
    waker dropped;  // destroyed after the lock: dropping a task reference may run destructors
    {
        lock_guard l(mu_);
        if (s.level == timer_entry::pending_level) {
            if (s.prev)
                s.prev->next = s.next;
            else
                pending_ = s.next;
            if (s.next) s.next->prev = s.prev;
            s.prev = s.next = nullptr;
            s.level = timer_entry::unlinked;
            --pending_count_;
        } else if (s.linked()) {
            wheel_.remove(&s);
        } else {
            // never armed, or fired (its wake is on its way or done); the model's
            // timer_disarm_fired control claims it was disarmed anyway
            return BLITZ_MODEL_DEFECT(timer_disarm_fired);
        }
        dropped = std::move(s.w);
        publish_next();
    }
    return true;
}

std::size_t timer_driver::fire_due(bool wait) {
    // Fast path without the lock (and without reading the clock when nothing is armed):
    // nothing can be due before next_tick_.
    if (!wait) {
        const std::uint64_t next = next_tick_.load(std::memory_order_acquire);
        if (next == UINT64_MAX || next > now_tick()) return 0;
    }
    if (wait) {
        mu_.lock();
    } else if (!mu_.try_lock()) {
        return 0;  // another worker is firing right now
    }
    lock_guard l(mu_, std::adopt_lock);
    // The wheel calls back synchronously, with mu_ held; the analysis does not follow a lock
    // into a lambda, so this one is exempt.
    wheel_.advance(now_tick(), [&](timer_entry* e) BLITZ_NO_TSA {
        e->level = timer_entry::pending_level;
        e->prev = nullptr;
        e->next = pending_;
        if (pending_) pending_->prev = e;
        pending_ = e;
        ++pending_count_;
    });
    publish_next();
    return drain_pending();
}

std::size_t timer_driver::drain_pending() {
    constexpr std::size_t batch_size = 32;
    std::size_t total = 0;
    while (pending_) {
        waker batch[batch_size];
        std::size_t n = 0;
        while (pending_ && n < batch_size) {
            auto* s = static_cast<timer_slot*>(pending_);
            pending_ = s->next;
            if (pending_) pending_->prev = nullptr;
            s->prev = s->next = nullptr;
            s->level = timer_entry::unlinked;
            --pending_count_;
            batch[n++] = std::move(s->w);
            // release: the waiter's readiness check (acquire) may now resume it; we no longer
            // touch the slot after this store
            s->fired.store(true, std::memory_order_release);
        }
        publish_next();
        // Counted before the wakes, so a woken task that reads the metrics sees its own timer.
        fired_.fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic
        mu_.unlock();  // wakers are never called with the lock held
        for (std::size_t i = 0; i < n; ++i) std::move(batch[i]).wake();
        total += n;
        mu_.lock();
    }
    return total;
}

std::optional<timer_driver::clock::time_point> timer_driver::next_expiry() const noexcept {
    if (paused_) return std::nullopt;  // virtual time does not pass while sleeping
    const std::uint64_t next = next_tick_.load(std::memory_order_seq_cst);  // see class comment
    if (next == UINT64_MAX) return std::nullopt;
    return origin_ + tick * static_cast<std::int64_t>(std::min(next, max_tick));
}

void timer_driver::advance(duration d) {
    if (!paused_) throw std::logic_error("blitz: advance() needs a runtime with start_paused");
    if (d < duration::zero()) throw std::invalid_argument("blitz: advance() by a negative time");
    // release: pairs with the acquire in now()
    virtual_offset_ns_.fetch_add(d.count(), std::memory_order_release);
    fire_due(/*wait=*/true);
}

bool timer_driver::advance_to_next() {
    if (!paused_) throw std::logic_error("blitz: advance() needs a runtime with start_paused");
    const std::uint64_t next = next_tick_.load(std::memory_order_seq_cst);  // see class comment
    if (next == UINT64_MAX) return false;
    const clock::time_point due =
        origin_ + tick * static_cast<std::int64_t>(std::min(next, max_tick));
    const clock::time_point at = now();
    advance(due > at ? std::chrono::duration_cast<duration>(due - at) : duration::zero());
    return true;
}

std::size_t timer_driver::pending() const {
    lock_guard l(mu_);
    return wheel_.size() + pending_count_;
}

std::uint64_t timer_driver::cascades() const {
    lock_guard l(mu_);
    return wheel_.cascades();
}

}  // namespace blitz::detail
