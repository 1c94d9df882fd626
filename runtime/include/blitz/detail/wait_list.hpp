// SPDX-License-Identifier: MIT
#pragma once
// Intrusive waiter queues shared by the sync primitives, the channels and the I/O readiness
// waiters (issue 6; below both sync/ and io/ since issue 16).
//
// Protocol for a primitive P with an internal mutex:
//   1. A task that must wait links a wait_node (inside its awaiter, so no allocation) into P's
//      wait_queue under P's mutex, with the task's waker in it.
//   2. Whoever satisfies the waiter does, under the mutex: unlink, move the waker into a
//      wake_batch, then set `done` (release). The waker is called only after the mutex is
//      released (wake_batch's flush), never under it.
//   3. The awaiter's readiness check reads `done` (acquire); a stray wake finds it false and the
//      task stays suspended.
//   4. An awaiter destroyed while linked unlinks itself under the mutex and gives back whatever
//      it held; one destroyed after `done` but before resuming gives back what it was granted.

#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/waker.hpp"

namespace blitz::detail {

// One waiter. Circularly linked: a node linked to itself is in no queue.
// Invariants: prev/next and w are touched only under the owning primitive's mutex; after `done`
// is set the node is in no queue and the primitive never touches it again.
struct wait_node {
    wait_node* prev = this;
    wait_node* next = this;
    waker w;
    detail::atomic<bool> done{false};
    void* owner = nullptr;  // the awaiter this node belongs to

    wait_node() = default;
    explicit wait_node(void* o) noexcept : owner(o) {}
    wait_node(const wait_node&) = delete;
    wait_node& operator=(const wait_node&) = delete;

    bool linked() const noexcept { return next != this; }
    void unlink() noexcept {
        prev->next = next;
        next->prev = prev;
        prev = next = this;
    }
};

// A FIFO of wait_nodes around a sentinel. Not thread-safe: guarded by the primitive's mutex.
class wait_queue {
public:
    wait_queue() = default;
    wait_queue(const wait_queue&) = delete;
    wait_queue& operator=(const wait_queue&) = delete;

    bool empty() const noexcept { return head_.next == &head_; }
    wait_node* front() noexcept { return empty() ? nullptr : head_.next; }
    wait_node* back() noexcept { return empty() ? nullptr : head_.prev; }
    void push_back(wait_node* n) noexcept {
        n->prev = head_.prev;
        n->next = &head_;
        head_.prev->next = n;
        head_.prev = n;
    }
    // Moves every node of this queue to the back of `to` (both under the same mutex).
    void splice_into(wait_queue& to) noexcept {
        while (wait_node* n = front()) {
            n->unlink();
            to.push_back(n);
        }
    }

private:
    wait_node head_;
};

// Wakers taken out under a lock, woken after it is released. Holds up to 32; callers flush when
// full (unlock, wake, relock), so waking many waiters needs no allocation.
class wake_batch {
public:
    static constexpr unsigned capacity = 32;
    wake_batch() noexcept {}
    wake_batch(const wake_batch&) = delete;
    wake_batch& operator=(const wake_batch&) = delete;
    ~wake_batch() { flush(); }

    bool full() const noexcept { return n_ == capacity; }
    // Unlinks `n`, takes its waker and marks it done. Call under the primitive's mutex.
    void complete(wait_node* n) noexcept {
        if (n->linked()) n->unlink();
        ::new (static_cast<void*>(&slot_[n_++])) waker(static_cast<waker&&>(n->w));
        n->done.store(true, std::memory_order_release);  // pairs with the awaiter's ready check
    }
    // Wakes everything collected. Call without the mutex.
    void flush() noexcept {
        for (unsigned i = 0; i < n_; ++i) {
            waker& w = *std::launder(reinterpret_cast<waker*>(&slot_[i]));
            static_cast<waker&&>(w).wake();
            w.~waker();
        }
        n_ = 0;
    }

private:
    // Raw slots: a batch is built on every release, and most carry no waker at all, so the
    // wakers are constructed only as they are taken.
    struct alignas(waker) slot {
        unsigned char bytes[sizeof(waker)];
    };
    slot slot_[capacity];
    unsigned n_ = 0;
};

// Completes every waiter linked in `q` at this moment (calling on_each(node) first, under the
// mutex), moving them aside first so that one re-linking meanwhile is left for the next round.
// Call with `mu` held; a full batch is flushed with `mu` released (and taken back), and the
// caller flushes the rest after unlocking.
template <class F>
void complete_all(wait_queue& q, detail::mutex& mu, wake_batch& b, F on_each) noexcept
    BLITZ_REQUIRES(mu) {
    wait_queue now;
    q.splice_into(now);
    while (wait_node* w = now.front()) {
        on_each(w);
        b.complete(w);
        if (b.full()) {
            mu.unlock();
            b.flush();
            mu.lock();
        }
    }
}
inline void wake_all(wait_queue& q, detail::mutex& mu, wake_batch& b) noexcept BLITZ_REQUIRES(mu) {
    complete_all(q, mu, b, [](wait_node*) noexcept {});
}

// For a handle going away: decrements `count` under `mu` and, if it was the last one, wakes
// every waiter so they can see the end (wakers run after `mu` is released).
inline void leave_and_wake_if_last(detail::mutex& mu, std::size_t& count, wait_queue& q) noexcept {
    wake_batch b;
    detail::unique_lock l(mu);
    if (--count == 0) wake_all(q, mu, b);
    l.unlock();
    b.flush();
}

}  // namespace blitz::detail
