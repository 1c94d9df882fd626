// SPDX-License-Identifier: MIT
#pragma once
// receive_queue: what a descriptor received before anyone read it (R4, R7, issue 44).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {
class pooled_buffer;
}

namespace blitz::detail {

class buffer_pool;

// Bytes and descriptors a descriptor's completion operations produced that no read or accept
// has taken yet, oldest first: the kept bytes (received late by an abandoned receive, or put
// back by one that settled), the pool buffers a multishot receive filled, and the connections a
// listener's multishot accept took.
//
// Protocol:
//   1. The driver pushes (keep, push_chunk, push_accepted), then wakes the descriptor's readers.
//   2. A read takes from the front (take, take_pooled): kept bytes first, as they are older than
//      every queued buffer (one receive of a descriptor is in the kernel at a time). An accept
//      takes the oldest connection (take_accepted).
//   3. Closing a listener takes every queued connection at once (take_accepted_all) to close
//      them; the queue's destructor gives back and closes whatever is left.
//
// Invariants:
//  - Every byte pushed is taken exactly once, in order, or released with the queue; every pool
//    buffer queued goes back to its pool exactly once (taken whole by take_pooled, which then
//    owns the reference, or released when its last byte is copied out or the queue goes).
//  - Every descriptor pushed is taken exactly once, or closed with the queue.
//  - bytes()/chunks()/accepted() never read less than the queue holds once the push returned:
//    each count is raised after its push, under mu_, and lowered only by a take.
//
// Memory ordering: the counts are raised with release inside mu_ and read with acquire without
// it, so a reader that sees a count non-zero takes mu_ and finds the item; one that sees zero is
// either before the push (and is woken by the pusher's wake, which comes after) or after a take.
// A waiter decides under its descriptor's waiter lock: a push made before that lock was taken
// by the pusher's wake is visible to it.
//
// Thread-safety: every method from any thread.
class receive_queue {
public:
    receive_queue() = default;
    ~receive_queue();  // gives queued pool buffers back and closes queued connections
    receive_queue(const receive_queue&) = delete;
    receive_queue& operator=(const receive_queue&) = delete;

    // R4: keeps `n` bytes for the next read; `front`: they were taken from the kept bytes and go
    // back before the rest.
    void keep(const std::byte* p, std::size_t n, bool front = false);
    // Copies up to `n` of the oldest bytes out: the kept ones, else the front buffer's rest.
    // Returns 0 when nothing is queued.
    std::size_t take(void* out, std::size_t n) noexcept;
    // R7: a buffer a multishot receive filled (the queue holds its pool reference).
    void push_chunk(buffer_pool* pool, std::uint16_t id, std::uint32_t len);
    // The oldest bytes whole: the kept ones (copied into a heap buffer), or the front buffer's
    // rest with its pool reference. False when nothing is queued.
    bool take_pooled(pooled_buffer& out);
    // A connection a listener's multishot accept took.
    void push_accepted(int fd);
    // The oldest queued connection, or -1.
    int take_accepted() noexcept;
    // Every queued connection (the listener is closing: the caller closes them).
    std::deque<int> take_accepted_all() noexcept;

    std::size_t bytes() const noexcept { return bytes_.load(std::memory_order_acquire); }
    std::size_t chunks() const noexcept { return chunk_count_.load(std::memory_order_acquire); }
    std::size_t accepted() const noexcept {
        return accepted_count_.load(std::memory_order_acquire);
    }
    // True when a read or an accept would find something.
    bool any() const noexcept { return bytes() != 0 || chunks() != 0 || accepted() != 0; }

private:
    // A filled buffer and its pool: the shared ring's or a worker ring's, so one queue may hold
    // buffers of several pools.
    struct pool_chunk {
        buffer_pool* pool;
        std::uint16_t id;
        std::uint32_t len, off;
    };

    mutable detail::mutex mu_;
    std::vector<std::byte> kept_ BLITZ_GUARDED_BY(mu_);
    std::size_t kept_pos_ BLITZ_GUARDED_BY(mu_) = 0;  // kept_[kept_pos_..] are unread
    std::deque<pool_chunk> chunks_ BLITZ_GUARDED_BY(mu_);
    std::deque<int> accepted_ BLITZ_GUARDED_BY(mu_);
    atomic<std::size_t> bytes_{0};  // kept bytes beyond kept_pos_
    atomic<std::size_t> chunk_count_{0};
    atomic<std::size_t> accepted_count_{0};
};

}  // namespace blitz::detail
