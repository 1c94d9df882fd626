// SPDX-License-Identifier: MIT
#pragma once
// worker_rings: the I/O driver's ring per worker (io_uring, issue 44, IO.md 7.6).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/atomic.hpp"
#include "io/backend.hpp"

namespace blitz::detail {

class buffer_pool;
class uring_backend;
struct io_driver_stats;
struct io_op_state;

// A ring per worker for completion operations, each with a mailbox of cancels from other
// threads. Readiness polls and the operations of plain threads stay on the driver's shared
// ring; everything here names the concrete io_uring backend so the driver does not.
//
// Protocol:
//   1. create() makes every ring before the workers start, or none (a kernel that refuses one
//      leaves every worker on the shared ring, and text() says why).
//   2. Worker i enables ring i on its own thread (attach) and is from then on its only issuer
//      (SINGLE_ISSUER): it submits the operations it starts there (submit), cancels its own
//      there, reaps the ring at every look (poll_own) and, parked with operations in flight,
//      sleeps in it (park_own).
//   3. Any other thread that must cancel an operation on ring i (a thief that runs the task
//      now, a closer, the shutdown) posts the operation's user_data to ring i's mailbox and
//      wakes the ring; the owner sends those cancels at its next look (2).
//   4. Before exiting, the owner cancels and reaps everything on its ring (the driver's
//      detach_worker), then detaches.
//
// Invariants:
//  - op->ring is the index of the ring that holds op in the kernel, or -1 for the shared ring.
//  - Only the thread attached to ring i submits to, cancels on, reaps or waits in ring i.
//  - A mailbox entry carries the operation's generation: a state reused since the cancel was
//    asked for is not cancelled (the kernel finds no match).
//  - A cancel posted to a mailbox is sent by the owner at its next look or before it exits:
//    the post is in the mailbox before the ring's wake, so an owner asleep in it wakes and
//    finds it.
//
// Memory ordering: the mailbox is ring_mailbox's protocol (ring_mailbox.hpp, modelled in
// stress/model/models/ring_mailbox_model.cpp); the ring's wake is the eventfd waker's
// (backend.hpp), modelled in stress/model/models/ring_park_model.cpp.
//
// Thread-safety: create() before the workers start; attach/detach/own/own_busy/submit/
// poll_own/park_own/wait_own on the owner's thread; cancel, wake and the statistics from any
// thread.
class worker_rings {
public:
    worker_rings();
    ~worker_rings();
    worker_rings(const worker_rings&) = delete;
    worker_rings& operator=(const worker_rings&) = delete;

    // Makes `workers` rings of `entries` entries that run the file opcodes `shared` runs, each
    // with a pool of `pool_count` x `pool_size` buffers (0: none). On failure makes none.
    void create(const io_backend& shared, unsigned workers, unsigned entries, unsigned pool_count,
                unsigned pool_size);
    unsigned count() const noexcept { return count_; }
    // "a ring per worker (...)" for io_rings, or why there is none; empty when not asked for.
    const std::string& text() const noexcept { return text_; }

    // On worker `index`'s thread, first: enables its ring with that thread as its only issuer,
    // and makes it the thread's own ring of this set. False (with a line on stderr) when the
    // kernel refuses: the worker then submits to the shared ring.
    bool attach(unsigned index) noexcept;
    // On its thread, last: the thread has no own ring any more.
    void detach() noexcept;
    // The calling thread's ring of this set and its index, or null.
    uring_backend* own(unsigned& index) const noexcept;
    // True when the caller's own ring has operations in flight.
    bool own_busy() const noexcept;
    // The caller's own ring's buffer pool, or null.
    buffer_pool* own_pool() const noexcept;
    // The pool of ring `index` (an operation's op->ring).
    buffer_pool* pool(unsigned index) const noexcept;

    // Puts `op` on the caller's own ring (setting op->ring) and returns true; false when the
    // caller has none, or `op` is a pooled receive and its ring has no pool: the caller submits
    // to the shared ring.
    bool submit(io_op_state* op) noexcept;
    // Cancels `op`, which runs on ring op->ring >= 0: at once on the caller's own ring, through
    // the owner's mailbox otherwise.
    void cancel(io_op_state* op) noexcept;
    // Ends ring `index`'s sleep (or makes its next one return at once).
    void wake(unsigned index) noexcept;

    // The caller's ring, which must be its own: the mailbox's cancels, then the completions (no
    // syscall unless the kernel flags deferred work). Returns the events reported to `sink`.
    std::size_t poll_own(unsigned index, io_event_sink& sink) noexcept;
    // A parked worker's sleep in its own ring up to `timeout`: the mailbox, then what completed
    // already (returned without sleeping), else a wait that also ends on a wake() and, with
    // `watch_fd` >= 0, when that descriptor turns readable (`watch_fired` then says so).
    std::size_t park_own(unsigned index, std::chrono::nanoseconds timeout, int watch_fd,
                         io_event_sink& sink, bool& watch_fired) noexcept;
    // A wait in ring `index` (its owner's drain before exit).
    std::size_t wait_own(unsigned index, std::chrono::nanoseconds timeout,
                         io_event_sink& sink) noexcept;
    std::uint64_t in_flight(unsigned index) const noexcept;

    // Adds the rings' syscalls, operations, handed cancels, stale completions and pools.
    void add_stats(io_driver_stats& st) const noexcept;

private:
    struct ring;
    void take_mail(ring& w) noexcept;

    std::unique_ptr<ring[]> rings_;
    unsigned count_ = 0;
    std::string text_;
    atomic<std::uint64_t> ops_{0}, handed_cancels_{0};  // statistics
};

}  // namespace blitz::detail
