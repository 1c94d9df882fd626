// SPDX-License-Identifier: MIT
#include "sched/global_queue.hpp"

#include <sched.h>

#include <algorithm>
#include <type_traits>

namespace blitz::detail {

global_queue::global_queue() noexcept : head_(&stub_), tail_(&stub_) {}

void global_queue::yield_cpu() noexcept {
#ifdef BLITZ_MODEL_ATOMIC_HEADER
    spin_pause();  // never reached there (no yields), but a scheduling point if it were
#else
    sched_yield();
#endif
}

void global_queue::count_lock() const noexcept {
    // relaxed: a statistic, written under the lock
    locks_.store(locks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

bool global_queue::locked_empty() const noexcept {
    lock_guard l(mu_);
    count_lock();
    return len() == 0;
}

void global_queue::append(task_header* first, task_header* last) noexcept {
    last->queue_next_.store(nullptr, std::memory_order_relaxed);  // published by the link below
    // acq_rel: acquire the previous tail's node (its producer's writes) to link from it; release
    // our chain to the producer that exchanges after us
    task_header* prev = tail_.exchange(last, std::memory_order_acq_rel);
    // release: the chain (its links and the tasks) to the consumer that reads this link
    prev->queue_next_.store(first, std::memory_order_release);
}

void global_queue::push_batch(task_header* first, task_header* last, std::uint32_t n) noexcept {
    // seq_cst, and before the exchange: the parking protocol's final check (idle_state's Dekker
    // argument) must see the queue non-empty from here on; and len_ never undercounts.
    len_.fetch_add(n, std::memory_order_seq_cst);
    if (BLITZ_FAULT(fault_locked_push_)) [[unlikely]] {  // G1's control: the push locks
        lock_guard l(mu_);
        count_lock();
        append(first, last);
    } else {
        append(first, last);
    }
#if BLITZ_FAULTS
    pushes_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic for Q4's tests
#endif
}

// take_one() finds a batch by its link, the first member at the batch's own address.
static_assert(std::is_standard_layout_v<task_batch>);

void global_queue::push_array(task_batch* b) noexcept {
    b->taken_ = 0;
    b->link_.flags_ = task_header::flag_queue_batch;
    // relaxed: only its producer reads it before a fetch clears it, and the link publishes it
    b->queued_.store(true, std::memory_order_relaxed);
    len_.fetch_add(b->count_, std::memory_order_seq_cst);  // seq_cst, and first: see push_batch
    append(&b->link_, &b->link_);
#if BLITZ_FAULTS
    pushes_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic for Q4's tests
#endif
}

std::uint32_t global_queue::take_from_batch(task_header** out, std::uint32_t room) noexcept {
    task_batch* b = batch_;
    const std::uint32_t k = std::min(room, b->count_ - b->taken_);
    std::copy_n(b->items_ + b->taken_, k, out);
    b->taken_ += k;
    if (b->taken_ == b->count_ || BLITZ_MODEL_DEFECT(batch_handed_back_early)) {
        batch_ = nullptr;
        // release: our reads of the batch come before its producer's next fill
        b->queued_.store(false, std::memory_order_release);
    }
    return k;
}

task_header* global_queue::take_one() noexcept {
    task_header* head = head_;
    // acquire: pairs with the release store of the link (the node behind it is complete)
    task_header* next = head->queue_next_.load(std::memory_order_acquire);
    if (head == &stub_) {
        if (!next) return nullptr;  // empty, or a push in flight
        head_ = head = next;        // step over the stub
        next = head->queue_next_.load(std::memory_order_acquire);
    }
    if (next) {
        head_ = next;
        return head;
    }
    // head is the last linked node. If it is not the tail, a producer has exchanged the tail
    // and not yet linked from head: wait for it (the caller returns what it has).
    if (head != tail_.load(std::memory_order_acquire)) return nullptr;
    if (BLITZ_MODEL_DEFECT(global_reset_to_stub)) {  // the model's control: the naive reset
        stub_.queue_next_.store(nullptr, std::memory_order_relaxed);
        tail_.store(&stub_, std::memory_order_release);  // loses a push racing this store
        head_ = &stub_;
        return head;
    }
    // Put the stub behind head, so head can leave without the queue becoming headless.
    append(&stub_, &stub_);
    next = head->queue_next_.load(std::memory_order_acquire);
    if (!next) return nullptr;  // a producer got in before the stub; its link is coming
    head_ = next;
    return head;
}

std::uint32_t global_queue::pop_share(task_header** out, std::uint32_t room, unsigned workers,
                                      std::uint32_t lo, std::uint32_t hi,
                                      std::uint64_t* len_seen) noexcept {
    if (room == 0 || empty()) return 0;
    lock_guard l(mu_);
    count_lock();
    const std::uint64_t len = len_.load(std::memory_order_seq_cst);
    if (len_seen) *len_seen = len;
    const std::uint64_t share = std::clamp<std::uint64_t>(len / std::max(workers, 1u), lo, hi);
    const auto want = static_cast<std::uint32_t>(std::min({len, share, std::uint64_t{room}}));
    std::uint32_t n = 0;
    // Consumers take and count under the lock, so a length above what is reachable means a push
    // in flight (its length raised, its exchange or its link to come, a few instructions on).
    // With nothing taken yet, wait a little for it; if its producer was preempted there, the
    // caller comes back (a non-empty queue keeps a worker from parking).
    unsigned waits = 0;
    while (n < want) {
        if (batch_) {  // the rest of a batch comes first
            n += take_from_batch(out + n, want - n);
            continue;
        }
        task_header* t = take_one();
        if (!t) {
            if (n > 0 || waits == link_wait_spins + link_wait_yields) break;
            if (waits++ < link_wait_spins) {
                spin_pause();
            } else {
                yield_cpu();
            }
            continue;
        }
        if (t->has(task_header::flag_queue_batch)) {
            batch_ = reinterpret_cast<task_batch*>(t);  // its link_ is its first member
            continue;
        }
        t->queue_next_.store(nullptr, std::memory_order_relaxed);
        out[n++] = t;
    }
    // seq_cst: see push_batch. Never below zero: pushes raise len_ before they link.
    if (n) len_.fetch_sub(n, std::memory_order_seq_cst);
    return n;
}

task_header* global_queue::pop() noexcept {
    task_header* t = nullptr;
    return pop_share(&t, 1, 1, 1, 1) ? t : nullptr;
}

}  // namespace blitz::detail
