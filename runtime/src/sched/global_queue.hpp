// SPDX-License-Identifier: MIT
#pragma once
// global_queue: the runtime-wide injection queue for tasks scheduled from outside a worker.

#include <cstdint>

#include "base/atomic.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

// An intrusive FIFO list of tasks (linked through task_header::queue_next_) under a mutex, with
// an atomic length so emptiness checks take no lock (G1).
//
// Invariants: len_ equals the list length whenever mu_ is free; every operation takes mu_ at most
// once, so an overflow of 129 tasks or a batch fetch costs one acquisition (Q4, G2).
// Memory ordering: the list is protected by mu_. len_ is written with seq_cst under the lock and
// read with seq_cst by the parking protocol's final check, so a producer's push and a parking
// worker's bitmap update cannot both miss each other (see idle_state).
// Thread-safety: every method from any thread.
class global_queue {
public:
    global_queue() = default;
    global_queue(const global_queue&) = delete;
    global_queue& operator=(const global_queue&) = delete;

    void push(task_header* t) noexcept { push_batch(t, t, 1); }
    // Appends the chain first..last (linked by queue_next_, `n` tasks) in one acquisition.
    void push_batch(task_header* first, task_header* last, std::uint32_t n) noexcept;

    // Takes a fair share for one of `workers` workers: n = min(len, clamp(len / workers, lo, hi)),
    // but never more than `room`; writes them to `out` in FIFO order and returns n (G2).
    // `len_seen`, if given, receives the queue length under the lock (for probes).
    std::uint32_t pop_share(task_header** out, std::uint32_t room, unsigned workers,
                            std::uint32_t lo, std::uint32_t hi,
                            std::uint64_t* len_seen = nullptr) noexcept;
    // Takes one task (used at shutdown and by tests); nullptr when empty.
    task_header* pop() noexcept;

    std::uint64_t len() const noexcept { return len_.load(std::memory_order_seq_cst); }
    bool empty() const noexcept {
        if (BLITZ_FAULT(fault_locked_empty_)) [[unlikely]]
            return locked_empty();
        return len() == 0;
    }
    // G1's negative control: emptiness checks take the lock (set before the queue is shared).
    void set_fault_locked_empty(bool on) noexcept { fault_locked_empty_ = on; }
    // Total lock acquisitions so far, for the overflow/batching checks (Q4, G2).
    std::uint64_t lock_acquisitions() const noexcept {
        return locks_.load(std::memory_order_relaxed);  // relaxed: a statistic
    }

private:
    void count_lock() const noexcept BLITZ_REQUIRES(mu_);
    bool locked_empty() const noexcept;

    mutable mutex mu_;
    task_header* head_ BLITZ_GUARDED_BY(mu_) = nullptr;
    task_header* tail_ BLITZ_GUARDED_BY(mu_) = nullptr;
    alignas(cache_line) atomic<std::uint64_t> len_{0};
    mutable atomic<std::uint64_t> locks_{0};
    bool fault_locked_empty_ = false;
};

}  // namespace blitz::detail
