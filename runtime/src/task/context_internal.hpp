// SPDX-License-Identifier: MIT
#pragma once
// The runtime context's setters (the context and its readers are in blitz/detail/context.hpp).

#include "blitz/detail/context.hpp"

namespace blitz::detail {

// The task the calling thread is polling (current_task() reads it). Inline: set twice a poll.
inline void set_current_task(task_header* t) noexcept { store_task_slot(tl_task, t); }
// Installs `r` as the calling thread's runtime (nullptr: none). A worker thread calls it first
// thing and clears it last.
void set_current_runtime(const runtime_context* r) noexcept;

// True while this thread dispatches the I/O driver's events (driver_stack sets it around its
// I/O work): a wake made then is an I/O wake, which the worker's io_ns histogram follows.
inline constinit thread_local bool tl_io_dispatch = false;
struct io_dispatch_scope {
    io_dispatch_scope() noexcept { tl_io_dispatch = true; }
    ~io_dispatch_scope() { tl_io_dispatch = false; }
    io_dispatch_scope(const io_dispatch_scope&) = delete;
    io_dispatch_scope& operator=(const io_dispatch_scope&) = delete;
};

// The runtime whose shutdown is destroying task frames on this thread, or nullptr.
inline const runtime_context* draining_runtime() noexcept { return tl_draining; }

// Makes `r` the draining runtime of this thread for a scope (see current_or_draining_runtime).
class draining_scope {
public:
    explicit draining_scope(const runtime_context* r) noexcept;
    ~draining_scope();
    draining_scope(const draining_scope&) = delete;
    draining_scope& operator=(const draining_scope&) = delete;

private:
    const runtime_context* prev_;
};

}  // namespace blitz::detail
