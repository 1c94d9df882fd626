// SPDX-License-Identifier: MIT
#pragma once
// task_list: the tasks that one worker's polls left suspended (lazy listing, issue 45), so that
// shutdown can find tasks that sit in no queue (K3). A task that has never been suspended is
// in a queue or running.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

// The owner's array of its tasks (each holding one reference); a task knows its list by the
// list's 16-bit id (task_header::reg_owner_) and its position in the array (reg_index_), so
// the header spends 6 bytes on it, not three pointers. Single owner, no lock:
//   1. push() appends a task when a poll of the owner first leaves it suspended;
//   2. remove() takes out a task that completed, at once (the last entry moves into its place),
//      and the caller drops the list's reference: on the owner's thread at completion; for a
//      task that completed elsewhere (stolen, or aborted from another thread), when the owner
//      takes it from its completion_inbox (issue 45: such tasks used to wait for a sweep, and
//      after a burst half of a server's connection frames stayed allocated);
//   3. the array grows by doubling (no allocation once it is big enough), and trim(), when the
//      owner goes idle, cuts an array under a quarter full to twice what is left (at least
//      1,024 entries);
//   4. pop() empties it at shutdown.
// A runtime's workers take consecutive ids (reserve_ids), so that a task's list id names the
// worker whose inbox gets it back.
//
// Invariants: a task is in at most one list; reg_owner_ holds the list's id exactly while the
// task is in it (0 otherwise; only the owner writes it, other threads may read it, see
// task_header) and then items_[reg_index_] is the task; every task pushed is released exactly
// once (remove, or the shutdown pass). Ids are unique among the lists alive at once unless
// 65,535 lists are made in between (a runtime makes one per worker); a task is only ever
// compared with lists of its own runtime.
// Memory ordering: none of its own; the inbox orders a completion before the owner's remove.
// Thread-safety: one owner thread (a worker). An allocation failure while growing terminates
// (as Tokio aborts on one).
class task_list {
public:
    task_list() noexcept;  // an id of its own
    explicit task_list(std::uint16_t id) noexcept : id_(id) {}
    ~task_list() { std::free(items_); }
    // Reserves n consecutive ids (1 <= n <= 4096) for one runtime's lists, none of them 0;
    // returns the first.
    static std::uint16_t reserve_ids(unsigned n) noexcept;
    std::uint16_t id() const noexcept { return id_; }
    // The id of the list that holds t, 0 if none (any thread; see listed()).
    static std::uint16_t owner_of(const task_header* t) noexcept {
        return t->reg_owner_.load(std::memory_order_relaxed);
    }
    // The link a completion_inbox of tasks uses: the global queue's, free once a task completed.
    struct inbox_link {
        static atomic<task_header*>& of(task_header* t) noexcept { return t->queue_next_; }
    };
    task_list(const task_list&) = delete;
    task_list& operator=(const task_list&) = delete;

    void push(task_header* t) noexcept {
        if (len_ == cap_) grow();
        t->reg_index_ = static_cast<std::uint32_t>(len_);
        t->reg_owner_.store(id_, std::memory_order_relaxed);
        items_[len_++] = t;
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
        return true;
    }
    // Going idle: an array under a quarter full after a burst keeps room for twice what is
    // left (at least 1,024 entries).
    void trim() noexcept {
        if (cap_ > 1024 && len_ < cap_ / 4) resize(std::max<std::size_t>(1024, 2 * len_));
    }
    // Takes out and returns one task (its reference passes to the caller); nullptr when empty.
    task_header* pop() noexcept {
        if (len_ == 0) return nullptr;
        task_header* t = items_[len_ - 1];
        take_out(len_ - 1);
        return t;
    }
    std::size_t size() const noexcept { return len_; }
    // The i-th task (i < size(); owner thread only): the dump walks the list with it.
    task_header* at(std::size_t i) const noexcept { return items_[i]; }
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
    std::uint16_t id_;  // never 0
};

}  // namespace blitz::detail
