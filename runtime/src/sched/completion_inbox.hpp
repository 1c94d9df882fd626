// SPDX-License-Identifier: MIT
#pragma once
// completion_inbox: the tasks of a worker's task list that completed on other threads, handed
// back to that worker so that their memory goes back at once (issue 45: before, they waited in
// the list for a sweep).

#include <cstdint>

#include "base/atomic.hpp"

namespace blitz::detail {

// An intrusive stack that many threads push to and one owner empties whole; Link::of(node) is
// the node's atomic next pointer.
//
// Protocol:
//   1. A thread that completed a task listed by another worker pushes it here after the RMW
//      that published the completion, and never touches it again: the list's reference keeps
//      the block alive, and only the owner drops it.
//   2. The owner takes the whole stack (take_all) at the start of each tick and before it
//      parks, takes each task out of its list and drops the list's reference: the block goes
//      back to its cache there, O(1) per task and no sweep.
//   The link is the task's queue_next_: a completed task is in no queue and never queued again.
//
// Invariants: a node is pushed at most once while it is in the stack; every pushed node is
// taken by exactly one take_all, in which it appears once; nothing the owner takes is freed by
// anyone before the owner takes it.
// Memory ordering: push's CAS is release (the link and whatever the pusher wrote before, such as
// the task's completion, to the owner); take_all's exchange is acquire. empty() is a relaxed
// hint: a push it misses is taken at the owner's next look, since every look goes through it.
// Thread-safety: push from any thread; take_all and empty on the owner thread only.
// PushOrder: release here; the pinned inbox (sched/pinned_queue.hpp) builds on this stack with
// a seq_cst push, for its handshake with the parked bit (seen_seq_cst).
template <class Node, class Link, std::memory_order PushOrder = std::memory_order_release>
class completion_inbox {
public:
    void push(Node* n) noexcept {
        Node* old = head_.load(std::memory_order_relaxed);  // relaxed: the CAS checks it
        do {
            Link::of(n).store(old, std::memory_order_relaxed);  // published by the CAS
        } while (!head_.compare_exchange_weak(old, n, BLITZ_ORDER(inbox_push, PushOrder),
                                              std::memory_order_relaxed));
    }
    // Everything pushed so far, newest first (follow next()); nullptr when empty.
    Node* take_all() noexcept {
        if (BLITZ_MODEL_DEFECT(inbox_load_then_clear)) {  // the model's control: loses a push
            Node* h = head_.load(std::memory_order_acquire);
            head_.store(nullptr, std::memory_order_relaxed);
            return h;
        }
        if (empty()) return nullptr;  // no RMW on the common path
        return head_.exchange(nullptr, std::memory_order_acquire);
    }
    static Node* next(Node* n) noexcept {
        return Link::of(n).load(std::memory_order_relaxed);  // ordered by take_all's acquire
    }
    bool empty() const noexcept { return head_.load(std::memory_order_relaxed) == nullptr; }
    // A seq_cst look (the owner's, against a pusher's seq_cst push and its own seq_cst store).
    bool seen_seq_cst() const noexcept { return head_.load(std::memory_order_seq_cst) != nullptr; }

private:
    alignas(cache_line) atomic<Node*> head_{nullptr};
};

}  // namespace blitz::detail
