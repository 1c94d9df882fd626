// SPDX-License-Identifier: MIT
#include "blitz/detail/context.hpp"

#include <stdexcept>
#include <utility>

#include "blitz/detail/select_scope.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"
#include "task/context_internal.hpp"

namespace blitz::detail {

namespace {
thread_local task_header* tl_task = nullptr;
thread_local worker* tl_worker = nullptr;
thread_local scheduler* tl_draining = nullptr;
}  // namespace

scheduler* draining_scheduler() noexcept { return tl_draining; }
draining_scope::draining_scope(scheduler* s) noexcept : prev_(std::exchange(tl_draining, s)) {}
draining_scope::~draining_scope() { tl_draining = prev_; }

task_header* current_task() noexcept { return tl_task; }
worker* current_worker() noexcept { return tl_worker; }
scheduler* current_scheduler() noexcept { return tl_worker ? &tl_worker->sched() : nullptr; }

bool fault_drop_exceptions() noexcept {
    return tl_worker && tl_worker->sched().cfg().debug.drop_exceptions;
}

bool fault_select_completes_losers() noexcept {
    return tl_worker && tl_worker->sched().cfg().debug.select_completes_losers;
}

void set_current_task(task_header* t) noexcept { tl_task = t; }
void set_current_worker(worker* w) noexcept { tl_worker = w; }

task_header* suspend_current(std::coroutine_handle<> h, ready_fn ready, const void* awaiter) {
    task_header* t = tl_task;
    if (!t) {
        throw std::logic_error(
            "blitz: this awaitable must be awaited inside a blitz task (one spawned on a "
            "runtime or run by runtime::block_on)");
    }
    if (select_scope* s = t->scope_) {
        s->record(h, ready, awaiter);  // one branch of a select suspends
        return t;
    }
    t->resume_point_ = h;
    t->ready_fn_ = ready;
    t->ready_ctx_ = awaiter;
    return t;
}

}  // namespace blitz::detail
