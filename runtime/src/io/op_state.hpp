// SPDX-License-Identifier: MIT
#pragma once
// io_op_state: one completion-mode operation (IO.md 7.3 R2-R5), owned by the I/O driver's slab
// from its submission until its final completion is reaped, whatever happens to the task that
// started it. Everything the kernel may touch lives here: the owned buffer (and, for later
// operation kinds, addresses and message headers), never in a coroutine frame.
//
// Lifecycle (`phase`): in_flight -> done (the driver stored the result; the awaiter takes it and
// frees the state) or in_flight -> orphaned (the awaiter went away first; the driver settles the
// late result and frees the state when the final completion arrives). An awaiter that goes away
// after `done` settles the result itself. Exactly one side frees.

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
    int result = 0;  // bytes, or -errno; written by the driver before `done`
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
};

}  // namespace blitz::detail
