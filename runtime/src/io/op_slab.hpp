// SPDX-License-Identifier: MIT
#pragma once
// op_slab: the I/O driver's completion operations' states, and each descriptor's side of them.

#include <cstdint>
#include <memory>
#include <vector>

#include "blitz/detail/io_api.hpp"
#include "blitz/detail/mutex.hpp"
#include "io/op_state.hpp"

namespace blitz::detail {

class scheduled_io;

// A descriptor's completion operations (R3-R5, R7), under the slab's lock: how many it has in
// flight, whether it is closing and the number to close after the last one, its one receive in
// the kernel and the receives queued behind it, and the end a multishot operation met.
struct descriptor_ops {
    unsigned ops = 0;
    bool closing = false;
    int close_fd = -1;
    io_op_state* recv_busy = nullptr;      // the receive in the kernel
    io_op_state* deferred_head = nullptr;  // receives waiting for it (qnext)
    io_op_state* deferred_tail = nullptr;
    // The multishot receive or accept ended with end of stream (0) or an error (<0) that the
    // next attempt reports after the queue.
    bool end_set = false;
    int end = 0;
};

// The states of every completion operation of one driver, and the lock that orders them.
//
// Protocol:
//   1. alloc() takes a state from the free list (a new chunk of 64 when it is empty), links it
//      in flight and counts it against its descriptor.
//   2. release() unlinks it, bumps its generation and puts it back on the free list. Chunks go
//      back to the heap only with the slab, and not even then while a state is in flight (a
//      drain that gave up: the kernel may still write into it).
//   3. close() of a descriptor with operations in flight records its number; the release that
//      takes its count to 0 returns the number to close (the deferred close, R5). With none in
//      flight, close() says to close now.
//
// Invariants:
//  - A state is on exactly one of the in-flight list and the free list.
//  - A state's generation changes every time it is released, so a completion or a cancel that
//    names an earlier use of it (its user_data carries the generation) matches nothing.
//  - of(s).ops is the number of in-flight states whose sio is s; a closing descriptor with
//    close_fd >= 0 has ops > 0, and its number is closed exactly once, by the release that takes
//    ops to 0.
//  - After shut_down(), alloc() is not called (the driver checks shut()).
//
// Memory ordering: everything here is under mu_. An operation's `phase` (io_op_state) is the
// only field read without it, by its awaiter, and is published by the driver with release.
//
// Thread-safety: every method under mu() (the driver's operation lock), which also guards each
// descriptor's descriptor_ops, reached only through of().
class op_slab {
public:
    op_slab() = default;
    ~op_slab();
    op_slab(const op_slab&) = delete;
    op_slab& operator=(const op_slab&) = delete;

    detail::mutex& mu() const noexcept BLITZ_RETURN_CAPABILITY(mu_) { return mu_; }

    // A state for `kind` on descriptor `s` (null: a file operation on `fd`), in flight.
    io_op_state* alloc(scheduled_io* s, io_op_kind kind, int fd) BLITZ_REQUIRES(mu_);
    // Back to the free list. Returns the number to close when `op` was the last operation of a
    // closing descriptor (else -1).
    int release(io_op_state* op) BLITZ_REQUIRES(mu_);
    // `s` is closing with `fd`: true when nothing is in flight (close it now); false when the
    // release of its last operation closes it (counted as a deferred close).
    bool close(scheduled_io* s, int fd) BLITZ_REQUIRES(mu_);
    descriptor_ops& of(scheduled_io* s) BLITZ_REQUIRES(mu_);

    // The in-flight states, newest first.
    io_op_state* live() const BLITZ_REQUIRES(mu_) { return live_; }
    void orphaned() BLITZ_REQUIRES(mu_) { ++orphaned_; }
    bool shut() const BLITZ_REQUIRES(mu_) { return shut_; }
    void shut_down() BLITZ_REQUIRES(mu_) { shut_ = true; }

    std::uint64_t started() const BLITZ_REQUIRES(mu_) { return started_; }
    std::uint64_t in_flight() const BLITZ_REQUIRES(mu_) { return in_flight_; }
    std::uint64_t orphans() const BLITZ_REQUIRES(mu_) { return orphaned_; }
    std::uint64_t deferred_closes() const BLITZ_REQUIRES(mu_) { return deferred_closes_; }

private:
    mutable detail::mutex mu_;
    std::vector<std::unique_ptr<io_op_state[]>> chunks_ BLITZ_GUARDED_BY(mu_);
    io_op_state* free_ BLITZ_GUARDED_BY(mu_) = nullptr;
    io_op_state* live_ BLITZ_GUARDED_BY(mu_) = nullptr;
    bool shut_ BLITZ_GUARDED_BY(mu_) = false;
    std::uint64_t started_ BLITZ_GUARDED_BY(mu_) = 0;
    std::uint64_t in_flight_ BLITZ_GUARDED_BY(mu_) = 0;
    std::uint64_t orphaned_ BLITZ_GUARDED_BY(mu_) = 0;
    std::uint64_t deferred_closes_ BLITZ_GUARDED_BY(mu_) = 0;
};

}  // namespace blitz::detail
