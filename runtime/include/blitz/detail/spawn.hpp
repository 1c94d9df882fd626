// SPDX-License-Identifier: MIT
#pragma once
// Turning a task<T> into a spawned task on a scheduler (runtime::spawn and blitz::spawn).

#include <source_location>
#include <stdexcept>

#include "blitz/detail/task_header.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/task.hpp"

namespace blitz::detail {

class task_scheduler;

// Sets up `t`'s header for `s` (task_header::init_spawned) and queues it: spawn_on's one call.
void submit_spawn(task_scheduler* s, task_header* t, std::coroutine_handle<> root,
                  std::source_location site) noexcept;
[[noreturn]] void throw_no_spawn_target();
// The current runtime's scheduler (or the draining one's, see current_or_draining_runtime);
// throws std::logic_error on a plain thread.
inline task_scheduler* spawn_target() {
    if (const runtime_context* r = current_or_draining_runtime()) return r->sched;
    throw_no_spawn_target();
}

template <class T>
join_handle<T> spawn_on(task_scheduler* s, task<T> t, std::source_location site = {}) {
    if (!t.valid()) throw std::invalid_argument("blitz::spawn: the task is empty");
    auto h = t.release();
    if (h.done()) {
        h.destroy();
        throw std::invalid_argument("blitz::spawn: the task has already run to completion");
    }
    task_header* hdr = h.promise().header_or_mark();
    if (hdr == promise_base::elided_mark()) {
        h.destroy();
        throw std::logic_error("blitz::spawn: the task frame was not heap-allocated");
    }
    submit_spawn(s, hdr, h, site);
    return join_handle<T>(hdr);
}
}  // namespace blitz::detail
