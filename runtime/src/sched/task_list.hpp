// SPDX-License-Identifier: MIT
#pragma once
// task_list: the tasks one owner spawned, so that shutdown can find tasks that sit in no queue
// (K3).

#include <atomic>
#include <cstddef>

#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

// An intrusive doubly-linked list (task_header::reg_prev_/reg_next_/reg_list_) holding one
// reference to each task in it. Single owner, no lock:
//   1. push() links a task when it is spawned;
//   2. remove() unlinks a task that completed on the owner's thread, at completion, so its
//      memory goes back at once (the caller drops the list's reference);
//   3. tasks that completed elsewhere (stolen) stay linked until a sweep: push() sweeps when
//      the list has doubled since the last sweep (plus a slack of 256), and
//      sweep_if_worthwhile() (the owner going idle) when a quarter of it is new. Each sweep
//      walks at most twice the pushes since the previous one: O(1) amortized per push;
//   4. pop() empties it at shutdown.
//
// Invariants: a task is in at most one list, and reg_list_ names it exactly while it is linked
// (only the owner writes it; other threads may read it, see task_header);
// every task pushed is released exactly once (remove, sweep, or the shutdown pass); len_ counts
// the linked tasks.
// Memory ordering: a sweep reads each task's lifecycle with acquire (task_header::is_complete).
// Thread-safety: one owner thread (a worker; the scheduler's list of foreign spawns is used
// under its mutex and is only swept).
class task_list {
public:
    task_list() = default;
    task_list(const task_list&) = delete;
    task_list& operator=(const task_list&) = delete;

    void push(task_header* t) noexcept {
        t->reg_prev_ = nullptr;
        t->reg_next_ = head_;
        if (head_) head_->reg_prev_ = t;
        head_ = t;
        t->reg_list_.store(this, std::memory_order_relaxed);
        ++len_;
        if (len_ >= 2 * kept_ + 256) sweep();
    }
    // Unlinks t if it is linked here; true if it was (the caller then owns the list's reference).
    bool remove(task_header* t) noexcept {
        if (t->reg_list_.load(std::memory_order_relaxed) != this) return false;
        unlink(t);
        if (kept_ > len_) kept_ = len_;
        return true;
    }
    void sweep_if_worthwhile() noexcept {
        const std::size_t fresh = len_ > kept_ ? len_ - kept_ : 0;
        if (fresh >= 64 && fresh >= kept_ / 4) sweep();
    }
    // Unlinks every completed task and releases the list's reference to it.
    void sweep() noexcept;
    // Unlinks and returns one task (its reference passes to the caller); nullptr when empty.
    task_header* pop() noexcept {
        task_header* t = head_;
        if (t) unlink(t);
        if (kept_ > len_) kept_ = len_;
        return t;
    }
    std::size_t size() const noexcept { return len_; }

private:
    void unlink(task_header* t) noexcept {
        if (t->reg_prev_) {
            t->reg_prev_->reg_next_ = t->reg_next_;
        } else {
            head_ = t->reg_next_;
        }
        if (t->reg_next_) t->reg_next_->reg_prev_ = t->reg_prev_;
        t->reg_prev_ = t->reg_next_ = nullptr;
        t->reg_list_.store(nullptr, std::memory_order_relaxed);
        --len_;
    }

    task_header* head_ = nullptr;
    std::size_t len_ = 0;
    std::size_t kept_ = 0;  // length right after the last sweep
};

}  // namespace blitz::detail
