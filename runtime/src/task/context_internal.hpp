// SPDX-License-Identifier: MIT
#pragma once
// Setters for the thread-local context (runtime-internal; readers are in blitz/detail/context.hpp).

namespace blitz::detail {
class task_header;
class worker;
void set_current_task(task_header* t) noexcept;
void set_current_worker(worker* w) noexcept;
// The scheduler whose shutdown is destroying task frames on this thread (nullptr: none): a
// destructor that spawns then reaches it (and gets a cancelled handle) instead of finding no
// runtime. Set for a scope by draining_scope.
class scheduler;
scheduler* draining_scheduler() noexcept;
class draining_scope {
public:
    explicit draining_scope(scheduler* s) noexcept;
    ~draining_scope();
    draining_scope(const draining_scope&) = delete;
    draining_scope& operator=(const draining_scope&) = delete;

private:
    scheduler* prev_;
};
}  // namespace blitz::detail
