// SPDX-License-Identifier: MIT
#pragma once
// The queues of a worker's pinned tasks (blitz::spawn_local, runtime::spawn_pinned): tasks that
// only their home worker ever polls. Neither queue is visible to thieves or to the global queue.

#include <cstdint>

#include "base/atomic.hpp"
#include "sched/completion_inbox.hpp"

namespace blitz::detail {

// pinned_inbox: the pinned tasks that other threads woke or spawned for this worker. An
// intrusive stack that many threads push to and the home worker empties whole, oldest first.
//
// Protocol:
//   1. A thread other than the home worker's makes a queue entry for a pinned task (a wake, a
//      cancellation, a spawn_pinned), pushes the task here, then reads the home worker's parked
//      bit and unparks it if the bit is set.
//   2. The home worker takes the whole inbox (take_oldest_first) at the start of each tick, in
//      its busy spin and before it parks; after it set its parked bit it looks once more
//      (seen_at_park) and does not sleep if the inbox holds anything.
//   The link is the task's queue_next_: a pinned task is in no other queue.
//
// Invariants: every pushed task is taken by exactly one take, once; tasks pushed by one thread
// come out in the order it pushed them; a task pushed while its home sleeps ends the sleep
// (the pusher sees the parked bit, or the home's look at park sees the task).
// The stack is a completion_inbox (its push and take_all) with a seq_cst push.
// Memory ordering: push's CAS is seq_cst and so are the pusher's read of the parked bit, the
// home's setting of it (idle_state's RMW) and its look at park: of the two store-then-read pairs
// one sees the other's store. The CAS also releases the pusher's writes (the queue entry) to
// the take's acquire exchange. empty() is a relaxed hint for the tick's look: a push it misses
// is taken at the next look, and the look at park is the seq_cst one.
// Thread-safety: push from any thread; take_oldest_first, empty and seen_at_park on the home
// worker's thread only.
template <class Node, class Link>
class pinned_inbox {
public:
    void push(Node* n) noexcept { box_.push(n); }
    // Everything pushed so far, oldest first (follow next()); nullptr when empty.
    Node* take_oldest_first() noexcept {
        Node* n = box_.take_all();  // newest first
        Node* reversed = nullptr;
        while (n) {
            Node* next = Link::of(n).load(std::memory_order_relaxed);  // ordered by the take
            Link::of(n).store(reversed, std::memory_order_relaxed);
            reversed = n;
            n = next;
        }
        return reversed;
    }
    static Node* next(Node* n) noexcept { return Link::of(n).load(std::memory_order_relaxed); }
    bool empty() const noexcept { return box_.empty(); }
    // The home's look after it set its parked bit (protocol step 2).
    bool seen_at_park() const noexcept {
        if (BLITZ_MODEL_DEFECT(pinned_no_look_at_park)) return false;  // the model's control
        return box_.seen_seq_cst();
    }

private:
    completion_inbox<Node, Link, std::memory_order_seq_cst> box_;  // its push: seq_cst
};

// pinned_fifo: the home worker's own queue of pinned tasks, in the order they were woken.
// Owner thread only (no protocol): the link is the task's queue_next_, with relaxed accesses.
template <class Node, class Link>
class pinned_fifo {
public:
    void push(Node* n) noexcept {
        Link::of(n).store(nullptr, std::memory_order_relaxed);
        if (tail_) {
            Link::of(tail_).store(n, std::memory_order_relaxed);
        } else {
            head_ = n;
        }
        tail_ = n;
        ++size_;
    }
    // A chain of `next`-linked tasks, oldest first (pinned_inbox::take_oldest_first's).
    template <class Next>
    void push_chain(Node* n, Next next) noexcept {
        while (n) {
            Node* after = next(n);
            push(n);
            n = after;
        }
    }
    Node* pop() noexcept {
        Node* n = head_;
        if (!n) return nullptr;
        head_ = Link::of(n).load(std::memory_order_relaxed);
        if (!head_) tail_ = nullptr;
        Link::of(n).store(nullptr, std::memory_order_relaxed);
        --size_;
        return n;
    }
    bool empty() const noexcept { return head_ == nullptr; }
    std::uint32_t size() const noexcept { return size_; }

private:
    Node* head_ = nullptr;
    Node* tail_ = nullptr;
    std::uint32_t size_ = 0;
};

}  // namespace blitz::detail
