// SPDX-License-Identifier: MIT
#pragma once
// io_op_state: one completion-mode operation (INVARIANTS.md R2-R5), owned by the I/O driver's slab
// from its submission until its final completion is reaped, whatever happens to the task that
// started it. Everything the kernel may touch lives here: the owned buffer (and, for later
// operation kinds, addresses and message headers), never in a coroutine frame.
//
// Lifecycle (`phase`): in_flight -> done (the driver stored the result; the awaiter takes it and
// frees the state) or in_flight -> orphaned (the awaiter went away first; the driver settles the
// late result and frees the state when the final completion arrives). An awaiter that goes away
// after `done` settles the result itself. Exactly one side frees.
//
// Invariants: the phase leaves in_flight once, by complete() or orphan(); the side that did not
// move it settles and frees; the kernel's user_data carries `gen`, which changes at every free.
// Memory ordering: complete() is an acq_rel CAS after the result is stored, finished() an
// acquire load, so the awaiter that sees `done` sees the result and the buffer's bytes
// (modelled: stress/model/models/op_slab_model.cpp). The other fields are under the slab's lock.
// Thread-safety: phase from any thread; the rest under the operation lock, or by the side that
// owns the state once it left in_flight.

#include <linux/time_types.h>

#include <cstdint>

#include "base/atomic.hpp"
#include "blitz/buffer.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/waker.hpp"

namespace blitz::detail {

struct alignas(16) io_op_state {
    enum : std::uint32_t { in_flight = 0, done = 1, orphaned = 2 };

    atomic<std::uint32_t> phase{in_flight};
    io_op_kind kind = io_op_kind::recv;
    // Bumped each time the slot is reused; carried in the kernel's user_data, so a completion or
    // a cancel meant for an earlier use of the slot is recognised and ignored (Go's fdseq).
    std::uint16_t gen = 0;
    // Under the driver's operation mutex: a cancel was submitted; the receive waits in its
    // descriptor's queue behind another receive (not in the kernel); the result was copied
    // from the descriptor's kept bytes, not received (settling puts them back in front).
    bool cancel_sent = false;
    bool deferred = false;
    bool from_unread = false;
    int result = 0;   // bytes, or -errno; written by the driver before `done`
    int zc_sent = 0;  // send_zc: its first completion's result, kept for its notification
    // Started under a timeout() (io_deadline.hpp): submitted with a linked timeout at
    // `link_deadline` (absolute, CLOCK_MONOTONIC), which the kernel reads from here (R2).
    bool linked = false;
    __kernel_timespec link_deadline{};
    int fd = -1;
    // The busy worker whose own ring runs it (a cancel must be submitted there, by that worker),
    // or -1 for the shared ring. Set at submission, under the operation mutex.
    int ring = -1;
    io_file_args file;            // a file operation's arguments (its fd is `fd`)
    scheduled_io* sio = nullptr;  // holds one of sio's operation references; null: a file op
    owned_buffer buf;
    waker w;  // the awaiting task; taken by the driver at completion
    // The driver's in-flight list, or its free list (next only), under the operation mutex.
    io_op_state* prev = nullptr;
    io_op_state* next = nullptr;
    io_op_state* qnext = nullptr;  // the descriptor's queue of receives, under the mutex

    // The phase protocol (modelled: stress/model/models/op_slab_model.cpp). Exactly one of the
    // driver's complete() and the awaiter's orphan() moves the state out of in_flight; the
    // other side then owns the result and frees the state.
    //
    // The driver, at the final completion: stores `res` and returns true when the awaiter will
    // take it (the caller wakes it), false when it was orphaned first (the caller settles the
    // late result and frees the state).
    bool complete(int res) noexcept {
        result = res;
        std::uint32_t expect = in_flight;
        // acq_rel: the awaiter that sees `done` sees the result and the bytes the kernel wrote
        // before the completion; the orphaning awaiter's writes are seen before we settle
        return phase.compare_exchange_strong(expect, done,
                                             BLITZ_ORDER(io_op_complete, std::memory_order_acq_rel),
                                             std::memory_order_acquire);
    }
    // The awaiter, giving up: true when the completion is still to come (the driver settles
    // and frees), false when it came first (the caller settles and frees).
    bool orphan() noexcept {
        if (BLITZ_MODEL_DEFECT(io_op_orphan_blind)) {  // the model's control: no look at `done`
            phase.store(orphaned, std::memory_order_release);
            return true;
        }
        std::uint32_t expect = in_flight;
        // acq_rel: pairs with complete(); a lost race reads the result complete() stored
        return phase.compare_exchange_strong(expect, orphaned,
                                             BLITZ_ORDER(io_op_orphan, std::memory_order_acq_rel),
                                             std::memory_order_acquire);
    }
    // The awaiter: the result is there to take.
    bool finished() const noexcept {
        // acquire: pairs with complete()'s release
        return phase.load(BLITZ_ORDER(io_op_finished, std::memory_order_acquire)) == done;
    }
};

}  // namespace blitz::detail
