// SPDX-License-Identifier: MIT
#pragma once
// home_stack: freed task blocks on their way back to the thread that allocated them (issue 45,
// item 5). A worker whose own block cache is full used to give a block another thread allocated
// to glibc's free, which takes that thread's arena lock while it allocates from the same arena:
// in spawn_many_local about half of all CPU time went to malloc and free and their futexes, and
// the row swung between 1 and 14 ms depending on whether thieves ran the spawned tasks.

#include <cstdint>

#include "base/atomic.hpp"

namespace blitz::detail {

// An intrusive stack that any thread pushes chains to and one owner empties whole, and that the
// owner closes when it exits; Link::of(node) is the node's atomic next pointer.
//
// Protocol:
//   1. A thread whose cache has no room for a block another thread allocated links a batch of
//      such blocks (all of one home) and pushes the chain with one CAS. A push that finds the
//      stack closed fails and leaves the chain with the caller, who frees it to the heap.
//   2. The owner takes the whole stack (take_all) when its cache runs out or it goes idle, and
//      keeps or frees each block itself: it is the only thread that frees them.
//   3. On exit the owner closes the stack (close), which also takes what was pushed, and hands
//      its slot back; a later owner of the slot reopens it (reopen) before stamping blocks.
//   A block pushed to a slot that changed owners reaches the new owner: any block fits any
//   thread, so only losing one or handing it out twice would be wrong.
//
// Invariants: every pushed node is returned by exactly one take_all or close, once; a push to a
// closed stack fails and its chain is not reachable from the stack; nodes the owner took are
// never in the stack.
// Memory ordering: push's CAS is release (the links and everything the pusher wrote into the
// blocks, to the owner); take_all's and close's exchanges are acquire. empty() is a relaxed hint:
// a chain it misses is taken at the next look or at close. reopen's store is relaxed: the slot's
// new owner publishes it by stamping blocks, which reach pushers through the queues and wakes
// that order everything else.
// Thread-safety: push_chain from any thread; take_all, close, reopen and empty on the owner.
template <class Node, class Link>
class home_stack {
public:
    // Pushes first ... last (linked through Link); false, with nothing pushed, if closed.
    bool push_chain(Node* first, Node* last) noexcept {
        Node* old = head_.load(std::memory_order_relaxed);  // relaxed: the CAS checks it
        do {
            if (old == closed()) return false;
            Link::of(last).store(old, std::memory_order_relaxed);  // published by the CAS
        } while (!head_.compare_exchange_weak(old, first,
                                              BLITZ_ORDER(home_push, std::memory_order_release),
                                              std::memory_order_relaxed));
        return true;
    }
    // Everything pushed so far, newest chain first (follow next()); nullptr when empty.
    Node* take_all() noexcept {
        if (empty()) return nullptr;  // no RMW on the common path
        return head_.exchange(nullptr, std::memory_order_acquire);
    }
    // Closes the stack and returns what was in it. Owner only, once per reopen.
    Node* close() noexcept {
        if (BLITZ_MODEL_DEFECT(home_close_load_then_store)) {  // the model's control: loses one
            Node* h = head_.load(std::memory_order_acquire);
            head_.store(closed(), std::memory_order_relaxed);
            return h;
        }
        return head_.exchange(closed(), std::memory_order_acquire);
    }
    void reopen() noexcept { head_.store(nullptr, std::memory_order_relaxed); }
    static Node* next(Node* n) noexcept {
        return Link::of(n).load(std::memory_order_relaxed);  // ordered by the taker's acquire
    }
    bool empty() const noexcept { return head_.load(std::memory_order_relaxed) == nullptr; }
    bool is_closed() const noexcept { return head_.load(std::memory_order_relaxed) == closed(); }

private:
    static Node* closed() noexcept { return reinterpret_cast<Node*>(std::uintptr_t{1}); }
    alignas(cache_line) atomic<Node*> head_{nullptr};
};

}  // namespace blitz::detail
