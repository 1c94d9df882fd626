// SPDX-License-Identifier: MIT
#include "sched/global_queue.hpp"

#include <algorithm>

namespace blitz::detail {

void global_queue::count_lock() const noexcept {
    // relaxed: a statistic, written under the lock
    locks_.store(locks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

bool global_queue::locked_empty() const noexcept {
    lock_guard l(mu_);
    count_lock();
    return len() == 0;
}

void global_queue::push_batch(task_header* first, task_header* last, std::uint32_t n) noexcept {
    last->queue_next_ = nullptr;
    lock_guard l(mu_);
    count_lock();
    if (tail_) {
        tail_->queue_next_ = first;
    } else {
        head_ = first;
    }
    tail_ = last;
    // seq_cst: pairs with the parking worker's final check (idle_state's Dekker argument)
    len_.store(len_.load(std::memory_order_relaxed) + n, std::memory_order_seq_cst);
}

std::uint32_t global_queue::pop_share(task_header** out, std::uint32_t room, unsigned workers,
                                      std::uint32_t lo, std::uint32_t hi,
                                      std::uint64_t* len_seen) noexcept {
    if (room == 0 || empty()) return 0;
    lock_guard l(mu_);
    count_lock();
    std::uint64_t len = len_.load(std::memory_order_relaxed);  // relaxed: we hold the lock
    if (len_seen) *len_seen = len;
    std::uint64_t share = std::clamp<std::uint64_t>(len / std::max(workers, 1u), lo, hi);
    auto n = static_cast<std::uint32_t>(std::min({len, share, std::uint64_t{room}}));
    for (std::uint32_t i = 0; i < n; ++i) {
        task_header* t = head_;
        head_ = t->queue_next_;
        t->queue_next_ = nullptr;
        out[i] = t;
    }
    if (!head_) tail_ = nullptr;
    len_.store(len - n, std::memory_order_seq_cst);  // seq_cst: see push_batch
    return n;
}

task_header* global_queue::pop() noexcept {
    task_header* t = nullptr;
    return pop_share(&t, 1, 1, 1, 1) ? t : nullptr;
}

}  // namespace blitz::detail
