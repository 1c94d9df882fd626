// SPDX-License-Identifier: MIT
#include "sched/local_queue.hpp"

#include <algorithm>
#include <new>

#include "blitz/detail/faults.hpp"
#include "sched/global_queue.hpp"

namespace blitz::detail {

local_queue::local_queue(std::uint32_t start) noexcept : head_(pack(start, start)), tail_(start) {
    for (auto& s : slots_) s.store(nullptr, std::memory_order_relaxed);  // relaxed: not shared yet
}

local_queue::push_result local_queue::push(task_header* t, global_queue& g,
                                           bool overflow_all) noexcept {
    for (;;) {
        std::uint32_t tail = tail_.load(std::memory_order_relaxed);  // relaxed: owner writes it
        // acquire: pairs with a thief's release of the steal head, so its copies are done
        std::uint64_t h = head_.load(std::memory_order_acquire);
        std::uint32_t steal = steal_of(h);
        const std::uint32_t bound =
            BLITZ_FAULT(faults_.full_check_uses_real_head) ? real_of(h) : steal;
        if (tail - bound < capacity) {
            // relaxed: the release store of tail_ below publishes the slot
            slots_[tail & mask].store(t, std::memory_order_relaxed);
            // release: publishes the slot (the model's ring_publish control weakens it)
            tail_.store(tail + 1, BLITZ_ORDER(ring_publish, std::memory_order_release));
            return {};
        }
        if (steal != real_of(h)) {
            // A thief is copying out of the ring: it will free room, but we cannot move half
            // the ring now. The new task goes to the global queue alone (Q4).
            g.push(t);
            return {1};
        }
        const std::uint32_t n = BLITZ_FAULT(overflow_all) ? capacity : capacity / 2;
        if (overflow(t, real_of(h), n, g)) return {n + 1};
        // A thief claimed between our load and the CAS; look again.
    }
}

local_queue::~local_queue() {
    // Fetches have handed every batch back: the scheduler drains the global queue before its
    // workers go (a test that drops a queue with batches still queued must not fetch them).
    for (std::uint32_t i = 0; i < pool_size_; ++i) delete pool_[(pool_head_ + i) % pool_cap_];
}

bool local_queue::grow_pool() noexcept {
    const std::uint32_t cap = pool_cap_ ? 2 * pool_cap_ : batches_kept;
    std::unique_ptr<task_batch*[]> bigger(new (std::nothrow) task_batch*[cap]);
    if (!bigger) return false;
    for (std::uint32_t i = 0; i < pool_size_; ++i) bigger[i] = pool_[(pool_head_ + i) % pool_cap_];
    pool_ = std::move(bigger);
    pool_cap_ = cap;
    pool_head_ = 0;
    return true;
}

task_batch* local_queue::next_batch(std::uint32_t n) noexcept {
    if (n > task_batch::capacity) return nullptr;
    task_batch* b = nullptr;
    if (pool_size_ != 0 && pool_[pool_head_]->reusable()) {
        b = pool_[pool_head_];  // the oldest moves to the back
        pool_head_ = (pool_head_ + 1) % pool_cap_;
        --pool_size_;
    } else {
        if (pool_size_ == pool_cap_ && !grow_pool()) return nullptr;
        b = new (std::nothrow) task_batch;
        if (!b) return nullptr;
    }
    pool_[(pool_head_ + pool_size_) % pool_cap_] = b;
    ++pool_size_;
    return b;
}

void local_queue::trim_batches() noexcept {
    while (pool_size_ > batches_kept && pool_[pool_head_]->reusable()) {
        delete pool_[pool_head_];
        pool_head_ = (pool_head_ + 1) % pool_cap_;
        --pool_size_;
    }
}

bool local_queue::overflow(task_header* t, std::uint32_t head, std::uint32_t n,
                           global_queue& g) noexcept {
    std::uint64_t expected = pack(head, head);
    // release: the slots we are about to read stay ours; relaxed on failure, we retry
    if (!head_.compare_exchange_strong(expected, pack(head + n, head + n),
                                       std::memory_order_release, std::memory_order_relaxed)) {
        return false;
    }
    // The n oldest tasks are ours now. They and the new task go in one push (Q4). relaxed
    // (slot loads): the slots are ours; the push's release store of its link publishes them.
    if (task_batch* b = next_batch(n + 1)) {
        task_header** items = b->items();
        for (std::uint32_t i = 0; i < n; ++i) {
            items[i] = slots_[(head + i) & mask].load(std::memory_order_relaxed);
        }
        items[n] = t;
        b->carry(n + 1);
        g.push_array(b);
        return true;
    }
    // No batch (Q4's control moves the whole ring, or memory ran out): chain them through
    // their headers instead.
    task_header* first = slots_[head & mask].load(std::memory_order_relaxed);  // relaxed: ours
    task_header* prev = first;
    for (std::uint32_t i = 1; i < n; ++i) {
        task_header* cur = slots_[(head + i) & mask].load(std::memory_order_relaxed);
        prev->queue_next_.store(cur, std::memory_order_relaxed);
        prev = cur;
    }
    prev->queue_next_.store(t, std::memory_order_relaxed);
    g.push_batch(first, t, n + 1);
    return true;
}

task_header* local_queue::pop() noexcept {
    if (BLITZ_FAULT(faults_.pop_from_tail)) [[unlikely]] {
        // Q3's fault (single-threaded use only): take the newest task, LIFO.
        const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
        if (real_of(head_.load(std::memory_order_acquire)) == tail) return nullptr;
        tail_.store(tail - 1, std::memory_order_release);
        return slots_[(tail - 1) & mask].load(std::memory_order_relaxed);
    }
    // acquire: pairs with a thief's claim/release CAS
    std::uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
        std::uint32_t real = real_of(h);
        std::uint32_t steal = steal_of(h);
        std::uint32_t tail = tail_.load(std::memory_order_relaxed);  // relaxed: owner writes it
        if (real == tail || (BLITZ_FAULT(faults_.pop_compares_indices) && real > tail))
            return nullptr;
        std::uint32_t next_real = real + 1;
        // The steal head follows the real head only when no steal is in progress.
        std::uint64_t next = steal == real ? pack(next_real, next_real) : pack(steal, next_real);
        // acq_rel: orders against thieves' claims on the same word
        if (head_.compare_exchange_weak(h, next, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
            return slots_[real & mask].load(std::memory_order_relaxed);  // relaxed: owner wrote it
        }
    }
}

local_queue::steal_result local_queue::steal_into(local_queue& dst, std::uint32_t max_steal,
                                                  bool steal_all) noexcept {
    // The thief owns dst: its tail is stable; its steal head bounds the room we may fill.
    std::uint32_t dst_tail = dst.tail_.load(std::memory_order_relaxed);  // relaxed: we own dst
    std::uint32_t dst_steal = steal_of(dst.head_.load(std::memory_order_acquire));
    std::uint32_t dst_free = capacity - (dst_tail - dst_steal);

    // 1. Claim.
    std::uint64_t h = head_.load(std::memory_order_acquire);  // acquire: see the owner's pops
    std::uint32_t real = 0, steal = 0, n = 0, avail = 0;
    for (;;) {
        steal = steal_of(h);
        real = real_of(h);
        if (steal != real) return {};  // another thief is copying from this victim (Q5)
        // acquire: pairs with the owner's release of tail_, so the slots below are visible
        std::uint32_t tail = tail_.load(std::memory_order_acquire);
        avail = tail - real;
        n = BLITZ_FAULT(steal_all) ? avail : avail - avail / 2;  // ceil(avail / 2)
        n = std::min({n, max_steal, dst_free + 1});  // +1: the first task is run, not stored
        if (n == 0) return {};
        // acq_rel: the claim orders our slot reads after it; failure reloads h
        const std::uint32_t claimed = BLITZ_FAULT(faults_.steal_claims_one_less) ? n - 1 : n;
        if (head_.compare_exchange_weak(h, pack(steal, real + claimed), std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
            break;
        }
    }

    // 2. Copy: the first claimed task is returned, the others go to dst's tail in order.
    task_header* first = slots_[real & mask].load(std::memory_order_relaxed);  // claimed: ours
    for (std::uint32_t i = 1; i < n; ++i) {
        task_header* t = slots_[(real + i) & mask].load(std::memory_order_relaxed);
        dst.slots_[(dst_tail + i - 1) & mask].store(t, std::memory_order_relaxed);
    }

    // 3. Release.
    release_steal();
    if (n > 1) dst.tail_.store(dst_tail + n - 1, std::memory_order_release);  // publishes copies
    return {first, n, avail};
}

void local_queue::release_steal() noexcept {
    // Move the steal head up to the real head (the owner may have popped meanwhile).
    std::uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
        std::uint32_t cur_real = real_of(h);
        // release: our slot reads happen before the owner may overwrite those slots
        if (head_.compare_exchange_weak(h, pack(cur_real, cur_real), std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
            return;
        }
    }
}

std::uint32_t local_queue::debug_claim(std::uint32_t n, task_header** out) noexcept {
    std::uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
        if (steal_of(h) != real_of(h)) return 0;
        std::uint32_t avail = tail_.load(std::memory_order_acquire) - real_of(h);
        std::uint32_t k = std::min(n, avail);
        if (k == 0) return 0;
        if (head_.compare_exchange_weak(h, pack(steal_of(h), real_of(h) + k),
                                        std::memory_order_acq_rel, std::memory_order_acquire)) {
            for (std::uint32_t i = 0; i < k; ++i) {
                out[i] = slots_[(real_of(h) + i) & mask].load(std::memory_order_relaxed);
            }
            return k;
        }
    }
}

std::uint32_t local_queue::span() const noexcept {
    // Tail first, then head: a concurrent push can only make the answer smaller, never larger.
    const std::uint32_t tail = tail_.load(std::memory_order_acquire);
    return tail - steal_of(head_.load(std::memory_order_acquire));
}

bool local_queue::steal_in_progress() const noexcept {
    std::uint64_t h = head_.load(std::memory_order_acquire);
    return steal_of(h) != real_of(h);
}

}  // namespace blitz::detail
