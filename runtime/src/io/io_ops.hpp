// SPDX-License-Identifier: MIT
#pragma once
// io_ops: the I/O driver's completion operations (io_uring; docs/INVARIANTS.md R1-R8).

#include <cstdint>
#include <optional>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/buffer.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/waker.hpp"
#include "io/op_slab.hpp"

namespace blitz::detail {

class buffer_pool;
class io_driver;
class scheduled_io;
struct io_driver_stats;

// Operations the kernel runs on a descriptor's or a file's behalf, from their start to their
// final completion: receives into owned buffers, sends, file operations, multishot receives
// into pool buffers and multishot accepts. Their states live in the slab (op_slab.hpp); what
// they received and nobody read yet waits in the descriptor's receive_queue.
//
// Protocol:
//   1. start() takes a state and submits it where it runs (the caller's own worker ring, else
//      the shared ring). One receive of a descriptor is in the kernel at a time; later ones
//      queue behind it and start, or end from kept bytes, when it settles (R4).
//   2. The kernel's final completion comes back through completed() or multishot(); the
//      awaiter takes the result (finish) or gives up (abandon): whichever of the two comes
//      second settles and frees (the phase protocol of io_op_state).
//   3. A multishot receive or accept queues what it gets in the descriptor's receive_queue and
//      is paused by a cancel once pool_queue items wait (backpressure); the next attempt on an
//      empty queue arms it again.
//   4. close() of a descriptor with operations in flight cancels them; the last one's release
//      closes it (R5).
//   5. shutdown() cancels every operation and reaps its final completion before it returns
//      (R8).
//
// Invariants: (R2-R8)
//  - The kernel never holds a pointer into a coroutine frame: everything it may touch lives in
//    the state (its owned buffer, its file arguments) until the final completion is reaped.
//  - Every received byte is delivered exactly once: to the awaiter, or kept for the next read
//    in order (an abandoned receive's late bytes, a multishot receive's buffers).
//  - A state is freed exactly once, after its final completion (a cancel's completion is not
//    one: the operation's own final completion still comes).
//  - Every operation in the kernel on ring k is cancelled by ring k's owner (worker_rings).
//
// Memory ordering: the slab's lock orders everything but an operation's phase, which the
// awaiter reads without it (io_op_state::finished, acquire; complete() releases).
//
// Thread-safety: every method from any thread; completed() and multishot() from the thread
// that reaps the ring (the driver's lock holder, or the ring's owner), with no backend lock held.
class io_ops {
public:
    explicit io_ops(io_driver& d) noexcept : d_(d) {}
    io_ops(const io_ops&) = delete;
    io_ops& operator=(const io_ops&) = delete;

    // The shared ring's pool (or null), the pool buffers' size, and the backpressure bound.
    void configure(buffer_pool* pool, unsigned buffer_size, unsigned queue) noexcept {
        pool_ = pool;
        pool_size_ = buffer_size;
        pool_queue_ = queue;
    }
    // write_owned sends of at least `bytes` go out as SEND_ZC (0: never; the caller passes 0
    // when the kernel lacks the opcode).
    void set_send_zc_threshold(std::size_t bytes) noexcept { zc_threshold_ = bytes; }
    // Owned reads and writes started under a timeout() get a linked timeout (io_deadline.hpp);
    // off with a virtual clock (paused time), whose deadlines the kernel cannot keep.
    void set_link_timeouts(bool on) noexcept { link_timeouts_ = on; }
    buffer_pool* pool() const noexcept { return pool_; }
    unsigned pool_buffer_size() const noexcept { return pool_size_; }

    io_op_state* start(scheduled_io* s, io_op_kind kind, owned_buffer& buf, waker& w);
    io_op_state* start_file(io_op_kind kind, const io_file_args& a, owned_buffer& buf, waker& w);
    long finish(io_op_state* op, owned_buffer& buf) noexcept;
    void abandon(io_op_state* op) noexcept;
    // Closes `fd` (registered as `s`) now, or after its last operation (R5).
    void close(scheduled_io* s, int fd) noexcept;
    long pooled_attempt(scheduled_io* s, int fd, pooled_buffer& out, owned_buffer& heap) noexcept;
    // `syscall` is set when the result came from a recv(2) on `fd` (not from queued bytes).
    long span_attempt(scheduled_io* s, int fd, void* data, std::size_t n, bool& syscall) noexcept;
    long accept_attempt(scheduled_io* s, int fd) noexcept;

    // The driver's event sink, for completion operations.
    void completed(io_op_state* op, int res) noexcept;
    void multishot(io_op_state* op, int res, int buffer, bool more) noexcept;

    // Runtime shutdown: no operation starts any more; every one on the shared ring is cancelled
    // and reaped (turning the driver) before this returns, or reported after 30 s.
    void shutdown() noexcept;
    // Worker `index`'s exit, on its thread: cancels what its ring still runs.
    void cancel_ring(unsigned index) noexcept;

    void add_stats(io_driver_stats& st) const noexcept;

private:
    // One completion of a listener's multishot accept: queues the descriptor, or records the
    // error that ended it.
    void accepted(io_op_state* op, int res, bool more) noexcept;
    // The late result of an operation nobody awaits: received bytes kept for the next read.
    void settle(io_op_state* op) noexcept;
    // Returns the state to the slab; closes the descriptor if it was the last operation of a
    // closed one.
    void free_op(io_op_state* op) noexcept;
    // A multishot receive's or accept's attempt once nothing is queued on `s`: the end it met
    // (once), -ECANCELED when `s` closes or the driver shuts down, -EAGAIN while one is in
    // flight or after arming `kind` (receives draw from `pool`); nullopt when a receive finds
    // no free buffer (the caller reads by syscall).
    std::optional<long> multishot_step_locked(scheduled_io* s, io_op_kind kind, buffer_pool* pool)
        BLITZ_REQUIRES(slab_.mu());
    // Ends `op` without the kernel (a queued receive): stores the result, marks it done and
    // adds its waker to `wakes` (woken once the lock is released).
    void complete_locked(io_op_state* op, int res, std::vector<waker>& wakes)
        BLITZ_REQUIRES(slab_.mu());
    // `s` has no receive in the kernel: starts its next queued receive, or ends queued ones
    // from kept bytes or with ECANCELED (closing, shut down).
    void promote_locked(scheduled_io* s, std::vector<waker>& wakes) BLITZ_REQUIRES(slab_.mu());
    // Shutdown: turns the driver until no operation is in flight.
    void drain_ops() noexcept;
    // Cancels every operation in the kernel on `ring` (-1: the shared ring; k: worker k's, on
    // its own thread) that has no cancel yet, or every one when `again` (a cancel the kernel
    // could not act on, the operation running, is sent anew).
    void cancel_in_kernel_locked(int ring, bool again) noexcept BLITZ_REQUIRES(slab_.mu());
    // Where an operation goes: the calling worker's own ring, else the shared ring.
    void submit_op(io_op_state* op) noexcept BLITZ_REQUIRES(slab_.mu());
    // Cancels on the ring that runs it: directly on the shared ring or the caller's own ring,
    // through the owner's mailbox otherwise.
    void cancel_op(io_op_state* op) noexcept BLITZ_REQUIRES(slab_.mu());

    io_driver& d_;
    // The states and the operation lock, which also guards the pool counters below and every
    // descriptor's descriptor_ops.
    op_slab slab_;
    atomic<std::uint64_t> orphan_bytes_{0};
    buffer_pool* pool_ = nullptr;
    unsigned pool_size_ = 4096, pool_queue_ = 16;
    std::size_t zc_threshold_ = 0;
    bool link_timeouts_ = false;
    bool pool_broken_ BLITZ_GUARDED_BY(slab_.mu()) = false;
    std::uint64_t pool_arms_ BLITZ_GUARDED_BY(slab_.mu()) = 0;
    std::uint64_t pool_chunks_ BLITZ_GUARDED_BY(slab_.mu()) = 0;
    std::uint64_t pool_enobufs_ BLITZ_GUARDED_BY(slab_.mu()) = 0;
    std::uint64_t pool_fallbacks_ BLITZ_GUARDED_BY(slab_.mu()) = 0;
    std::uint64_t send_zc_ BLITZ_GUARDED_BY(slab_.mu()) = 0;
    std::uint64_t linked_ BLITZ_GUARDED_BY(slab_.mu()) = 0;
};

}  // namespace blitz::detail
