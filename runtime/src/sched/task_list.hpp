// SPDX-License-Identifier: MIT
#pragma once
// task_list: the tasks one worker spawned (or adopted: spawned from outside, first fetched
// there), so that shutdown can find tasks that sit in no queue (K3).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

// The owner's array of its tasks (each holding one reference); a task knows its list by the
// list's 16-bit id (task_header::reg_owner_) and its position in the array (reg_index_), so
// the header spends 6 bytes on it, not three pointers. Single owner, no lock:
//   1. push() appends a task when it is spawned;
//   2. remove() takes out a task that completed on the owner's thread, at completion (the last
//      entry moves into its place), so its memory goes back at once (the caller drops the
//      list's reference);
//   3. tasks that completed elsewhere (stolen) stay until a sweep: push() sweeps when the list
//      has doubled since the last sweep (plus a slack of 256), and sweep_if_worthwhile() (the
//      owner going idle) when a quarter of it is new. Each sweep walks at most twice the pushes
//      since the previous one: O(1) amortized per push. The array grows by doubling (no
//      allocation once it is big enough) and a sweep that leaves it under a quarter full cuts it
//      to twice what is left (at least 1,024 entries);
//   4. pop() empties it at shutdown.
//
// Invariants: a task is in at most one list; reg_owner_ holds the list's id exactly while the
// task is in it (0 otherwise; only the owner writes it, other threads may read it, see
// task_header) and then items_[reg_index_] is the task; every task pushed is released exactly
// once (remove, sweep, or the shutdown pass). Ids are unique among the lists alive at once
// unless 65,535 lists are made in between (a runtime makes one per worker); a task is
// only ever compared with lists of its own runtime.
// Memory ordering: a sweep reads each task's lifecycle with acquire (task_header::is_complete).
// Thread-safety: one owner thread (a worker). An allocation failure while growing terminates
// (as Tokio aborts on one).
class task_list {
public:
    task_list() noexcept;
    ~task_list() { std::free(items_); }
    task_list(const task_list&) = delete;
    task_list& operator=(const task_list&) = delete;

    void push(task_header* t) noexcept {
        if (len_ == cap_) grow();
        t->reg_index_ = static_cast<std::uint32_t>(len_);
        t->reg_owner_.store(id_, std::memory_order_relaxed);
        items_[len_++] = t;
        if (len_ >= 2 * kept_ + 256) sweep();
    }
    // Lists t if it is in no list yet (a task spawned from outside the workers, when a worker
    // first fetches it from the global queue); the list's reference is the one spawn reserved.
    void adopt(task_header* t) noexcept {
        if (t->reg_owner_.load(std::memory_order_relaxed) == 0) push(t);
    }
    // Whether t is in some task list (any thread may ask; exact on the owner's thread and once
    // the workers stopped).
    static bool listed(const task_header* t) noexcept {
        return t->reg_owner_.load(std::memory_order_relaxed) != 0;
    }
    // Takes t out if it is here; true if it was (the caller then owns the list's reference).
    bool remove(task_header* t) noexcept {
        if (t->reg_owner_.load(std::memory_order_relaxed) != id_) return false;
        take_out(t->reg_index_);
        if (kept_ > len_) kept_ = len_;
        return true;
    }
    void sweep_if_worthwhile() noexcept {
        const std::size_t fresh = len_ > kept_ ? len_ - kept_ : 0;
        if (fresh >= 64 && fresh >= kept_ / 4) sweep();
    }
    // Takes out every completed task and releases the list's reference to it.
    void sweep() noexcept;
    // Takes out and returns one task (its reference passes to the caller); nullptr when empty.
    task_header* pop() noexcept {
        if (len_ == 0) return nullptr;
        task_header* t = items_[len_ - 1];
        take_out(len_ - 1);
        if (kept_ > len_) kept_ = len_;
        return t;
    }
    std::size_t size() const noexcept { return len_; }
    std::size_t capacity() const noexcept { return cap_; }

private:
    // Removes the task at i: the last one moves into its place.
    void take_out(std::size_t i) noexcept {
        task_header* t = items_[i];
        task_header* last = items_[--len_];
        items_[i] = last;
        last->reg_index_ = static_cast<std::uint32_t>(i);
        t->reg_owner_.store(0, std::memory_order_relaxed);
    }
    void grow() noexcept;
    bool resize(std::size_t cap) noexcept;  // false (and unchanged) if realloc fails

    task_header** items_ = nullptr;
    std::size_t len_ = 0;
    std::size_t cap_ = 0;
    std::size_t kept_ = 0;  // length right after the last sweep
    std::uint16_t id_;      // never 0
};

}  // namespace blitz::detail
