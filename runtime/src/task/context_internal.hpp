// SPDX-License-Identifier: MIT
#pragma once
// The runtime context as the library sees it: what a runtime offers the code running on its
// threads, and the setters (readers are in blitz/detail/context.hpp).

namespace blitz {
struct config;
}

namespace blitz::detail {

class task_header;
class task_scheduler;
class timer_driver;
class blocking_pool;
class io_driver;

// What a thread serving a runtime can reach without going through a worker: its scheduler
// (through the task/ interface), its timer driver, its I/O driver (null with io_backend =
// none), its blocking pool and its configuration.
// rt/ builds one per runtime and installs it on every worker thread; each subsystem reads
// only its own field, so none of them depends on rt/ or on the others.
struct runtime_context {
    task_scheduler* sched = nullptr;
    timer_driver* timers = nullptr;
    io_driver* io = nullptr;
    blocking_pool* blocking = nullptr;
    const config* cfg = nullptr;
};

void set_current_task(task_header* t) noexcept;
// Installs `r` as the calling thread's runtime (nullptr: none). A worker thread calls it first
// thing and clears it last.
void set_current_runtime(const runtime_context* r) noexcept;

// The runtime whose shutdown is destroying task frames on this thread, or nullptr.
const runtime_context* draining_runtime() noexcept;

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
