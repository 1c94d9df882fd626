// SPDX-License-Identifier: MIT
#include "time/timer_driver.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "blitz/detail/faults.hpp"

namespace blitz::detail {
namespace {
constexpr std::uint64_t max_tick = std::uint64_t{1} << 62;  // far past any real deadline
}

namespace {
// The worker this thread is, for the driver it belongs to (bind_worker).
thread_local const void* tl_driver = nullptr;
thread_local unsigned tl_shard = 0;  // that worker's shard (reduced once, at bind_worker)
// A thread that is not a worker of the driver uses a shard picked by a hash of where its
// thread-local storage lives: spread over threads, fixed for each, and no shared word to count.
thread_local unsigned tl_foreign = UINT_MAX;
unsigned foreign_pick() noexcept {
    const auto at = reinterpret_cast<std::uintptr_t>(&tl_foreign);
    // Fibonacci hashing: threads' storage sits at multiples of their stack size, so the low
    // bits alone would pick one shard for every thread.
    return static_cast<unsigned>((std::uint64_t{at} * 0x9E3779B97F4A7C15ull) >> 40);
}
}  // namespace

timer_driver::timer_driver(bool paused, early_fault early, unsigned workers)
    : paused_(paused),
      early_(early),
      origin_(clock::now()),
      shard_count_(std::clamp(workers, 1u, max_shards)),
      shards_(std::make_unique<shard[]>(shard_count_)) {}

void timer_driver::bind_worker(unsigned index) noexcept {
    tl_driver = this;
    tl_shard = index % shard_count_;
}

void timer_driver::unbind_worker() noexcept {
    if (tl_driver == this) tl_driver = nullptr;
}

unsigned timer_driver::calling_shard() const noexcept {
    if (shard_count_ == 1) return 0;  // no thread-local read at one worker
    if (tl_driver == this) return tl_shard;
    if (tl_foreign == UINT_MAX) tl_foreign = foreign_pick();
    return tl_foreign % shard_count_;
}

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

void timer_driver::lock_counted(shard& sh) noexcept {
    if (sh.mu.try_lock()) return;
    sh.lock_waits.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    sh.mu.lock();
}

std::uint64_t timer_driver::publish_next(shard& sh) noexcept {
    const std::uint64_t next = sh.pending ? 0 : sh.wheel.next_expiration().value_or(UINT64_MAX);
    // Unchanged, it is not stored: every worker's tick reads this line. relaxed: ours (the lock).
    if (sh.next_tick.load(std::memory_order_relaxed) != next) {
        // seq_cst: the store-load pattern with a parking worker (class comment); the model's
        // timer_publish control weakens it
        sh.next_tick.store(next, BLITZ_ORDER(timer_publish, std::memory_order_seq_cst));
    }
    return next;
}

std::uint64_t timer_driver::earliest_tick() const noexcept {
    std::uint64_t least = UINT64_MAX;
    for (unsigned i = 0; i < shard_count_; ++i) {
        // seq_cst: the parking side's store-load (class comment)
        least = std::min(least, shards_[i].next_tick.load(std::memory_order_seq_cst));
    }
    return least;
}

bool timer_driver::arm(timer_slot& s, clock::time_point deadline, waker w) {
    return arm_shard(calling_shard(), s, deadline, std::move(w));
}

bool timer_driver::arm_on(unsigned index, timer_slot& s, clock::time_point deadline, waker w) {
    return arm_shard(index % shard_count_, s, deadline, std::move(w));
}

bool timer_driver::arm_shard(unsigned index, timer_slot& s, clock::time_point deadline, waker&& w) {
    shard& sh = shards_[index];
    std::uint64_t next = UINT64_MAX;
    bool earlier = false;
    {
        lock_counted(sh);
        lock_guard l(sh.mu, std::adopt_lock);
        s.deadline = deadline_tick(deadline);
        s.shard = index;
        s.fired.store(false, std::memory_order_relaxed);  // relaxed: the slot is not shared yet
        if (!sh.wheel.insert(&s)) return false;           // already due: the caller proceeds
        s.w = std::move(w);
        const std::uint64_t before = sh.next_tick.load(std::memory_order_relaxed);  // ours
        next = publish_next(sh);
        earlier = next < before;
    }
    // The listener reads the planned wake-ups after the store above (class comment).
    if (earlier && listener_ && !paused_) {
        listener_->expiry_moved_earlier(origin_ + tick * static_cast<std::int64_t>(next));
    }
    return true;
}

bool timer_driver::disarm(timer_slot& s) noexcept {
    waker dropped;  // destroyed after the lock: dropping a task reference may run destructors
    // The slot's own shard; the model's timer_disarm_wrong_shard control takes the next one.
    const unsigned home = BLITZ_MODEL_DEFECT(timer_disarm_wrong_shard)
                              ? (s.shard + 1) % shard_count_
                              : s.shard;  // reduced by arm
    shard& sh = shards_[home];
    {
        lock_counted(sh);
        lock_guard l(sh.mu, std::adopt_lock);
        if (s.level == timer_entry::pending_level) {
            if (s.prev)
                s.prev->next = s.next;
            else
                sh.pending = s.next;
            if (s.next) s.next->prev = s.prev;
            s.prev = s.next = nullptr;
            s.level = timer_entry::unlinked;
            --sh.pending_count;
        } else if (s.linked()) {
            sh.wheel.remove(&s);
        } else {
            // never armed, or fired (its wake is on its way or done); the model's
            // timer_disarm_fired control claims it was disarmed anyway
            return BLITZ_MODEL_DEFECT(timer_disarm_fired);
        }
        dropped = std::move(s.w);
        publish_next(sh);  // the shard's expiry may move later
    }
    return true;
}

std::size_t timer_driver::fire_due_from(unsigned home, bool wait) {
    // Fast path without a lock (and without reading the clock when nothing is armed): nothing
    // is due before the earliest shard's next_tick.
    if (!wait) {
        const std::uint64_t next = earliest_tick();
        if (next == UINT64_MAX || next > now_tick()) return 0;
    }
    const std::uint64_t now = now_tick();
    std::size_t total = 0;
    for (unsigned k = 0; k < shard_count_; ++k) {
        shard& sh = shards_[(home + k) % shard_count_];
        if (!wait) {
            // relaxed: a hint; the lock orders what is fired
            const std::uint64_t due = sh.next_tick.load(std::memory_order_relaxed);
            if (due == UINT64_MAX || due > now) continue;
            if (!sh.mu.try_lock()) continue;  // being fired (or armed) elsewhere right now
        } else {
            sh.mu.lock();
        }
        lock_guard l(sh.mu, std::adopt_lock);
        total += fire_shard(sh, now);
    }
    return total;
}

std::size_t timer_driver::fire_shard(shard& sh, std::uint64_t now) {
    // The wheel calls back synchronously, with the lock held; the analysis does not follow a
    // lock into a lambda, so this one is exempt.
    sh.wheel.advance(now, [&](timer_entry* e) BLITZ_NO_TSA {
        e->level = timer_entry::pending_level;
        e->prev = nullptr;
        e->next = sh.pending;
        if (sh.pending) sh.pending->prev = e;
        sh.pending = e;
        ++sh.pending_count;
    });
    publish_next(sh);
    return drain_pending(sh);
}

std::size_t timer_driver::drain_pending(shard& sh) {
    constexpr std::size_t batch_size = 32;
    std::size_t total = 0;
    while (sh.pending) {
        waker batch[batch_size];
        std::size_t n = 0;
        while (sh.pending && n < batch_size) {
            auto* s = static_cast<timer_slot*>(sh.pending);
            sh.pending = s->next;
            if (sh.pending) sh.pending->prev = nullptr;
            s->prev = s->next = nullptr;
            s->level = timer_entry::unlinked;
            --sh.pending_count;
            batch[n++] = std::move(s->w);
            // release: the waiter's readiness check (acquire) may now resume it; we no longer
            // touch the slot after this store
            s->fired.store(true, std::memory_order_release);
        }
        publish_next(sh);
        // Counted before the wakes, so a woken task that reads the metrics sees its own timer.
        sh.fired.fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic
        sh.mu.unlock();  // wakers are never called with the lock held
        for (std::size_t i = 0; i < n; ++i) std::move(batch[i]).wake();
        total += n;
        sh.mu.lock();
    }
    return total;
}

std::optional<timer_driver::clock::time_point> timer_driver::next_expiry() const noexcept {
    if (paused_) return std::nullopt;  // virtual time does not pass while sleeping
    const std::uint64_t next = earliest_tick();
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
    const std::uint64_t next = earliest_tick();
    if (next == UINT64_MAX) return false;
    const clock::time_point due =
        origin_ + tick * static_cast<std::int64_t>(std::min(next, max_tick));
    const clock::time_point at = now();
    advance(due > at ? std::chrono::duration_cast<duration>(due - at) : duration::zero());
    return true;
}

std::size_t timer_driver::pending() const {
    return sum_locked([](const shard& sh) BLITZ_NO_TSA {
        return std::uint64_t{sh.wheel.size() + sh.pending_count};
    });
}

std::uint64_t timer_driver::cascades() const {
    return sum_locked([](const shard& sh) BLITZ_NO_TSA { return sh.wheel.cascades(); });
}

std::uint64_t timer_driver::fired_total() const noexcept { return sum(&shard::fired); }

std::uint64_t timer_driver::lock_waits() const noexcept { return sum(&shard::lock_waits); }

std::uint64_t timer_driver::sum(atomic<std::uint64_t> shard::* counter) const noexcept {
    std::uint64_t n = 0;
    for (unsigned i = 0; i < shard_count_; ++i) {
        n += (shards_[i].*counter).load(std::memory_order_relaxed);  // relaxed: a statistic
    }
    return n;
}

}  // namespace blitz::detail
