#pragma once
// task_list: the tasks one owner spawned, so that shutdown can find tasks that sit in no queue.

#include <cstddef>
#include <cstdint>

#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

// An intrusive singly-linked list (task_header::reg_next_) holding one reference to each task
// pushed into it. Completed tasks are swept out, releasing that reference, so the list stays
// within a constant factor of the owner's live tasks:
//   1. push() links the task at the head; when the list has doubled since the last sweep (plus
//      a slack of 256), it sweeps. Each sweep walks at most twice the pushes since the previous
//      one, so the cost is O(1) amortized per push.
//   2. sweep_if_worthwhile() (called when the owner goes idle) sweeps once a quarter of the list
//      is new since the last sweep, with the same amortized bound.
//   3. pop() empties it at shutdown.
//
// Invariants: every task pushed is released exactly once (by a sweep after it completed, or by
// the shutdown pass); len_ counts the linked tasks.
// Memory ordering: a sweep reads each task's lifecycle with acquire (task_header::is_complete).
// Thread-safety: single owner; the scheduler keeps one per worker (owner thread, no lock) and one
// under a mutex for spawns from threads that are not its workers.
class task_list {
public:
    task_list() = default;
    task_list(const task_list&) = delete;
    task_list& operator=(const task_list&) = delete;

    void push(task_header* t) noexcept {
        t->reg_next_ = head_;
        head_ = t;
        ++len_;
        if (len_ >= 2 * kept_ + 256) sweep();
    }
    void sweep_if_worthwhile() noexcept {
        const std::size_t fresh = len_ - kept_;
        if (fresh >= 64 && fresh >= kept_ / 4) sweep();
    }
    // Unlinks every completed task and releases the list's reference to it.
    void sweep() noexcept;
    // Unlinks and returns one task (its reference passes to the caller); nullptr when empty.
    task_header* pop() noexcept {
        task_header* t = head_;
        if (!t) return nullptr;
        head_ = t->reg_next_;
        t->reg_next_ = nullptr;
        --len_;
        kept_ = len_ < kept_ ? len_ : kept_;
        return t;
    }
    std::size_t size() const noexcept { return len_; }

private:
    task_header* head_ = nullptr;
    std::size_t len_ = 0;
    std::size_t kept_ = 0;  // length right after the last sweep
};

}  // namespace blitz::detail
