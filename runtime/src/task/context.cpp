// SPDX-License-Identifier: MIT
#include "blitz/detail/context.hpp"

#include <cassert>
#include <stdexcept>
#include <utility>

#include "blitz/config.hpp"
#include "blitz/detail/join_set_core.hpp"
#include "blitz/detail/select_scope.hpp"
#include "blitz/detail/spawn.hpp"
#include "blitz/detail/task_header.hpp"
#include "task/context_internal.hpp"
#include "task/schedule.hpp"

namespace blitz::detail {

draining_scope::draining_scope(const runtime_context* r) noexcept
    : prev_(std::exchange(tl_draining, r)) {}
draining_scope::~draining_scope() { tl_draining = prev_; }

#if BLITZ_FAULTS
bool fault_drop_exceptions() noexcept {
    return tl_runtime && tl_runtime->cfg->debug.drop_exceptions;
}

bool fault_select_completes_losers() noexcept {
    return tl_runtime && tl_runtime->cfg->debug.select_completes_losers;
}

bool fault_select_skips_loser_settle() noexcept {
    return tl_runtime && tl_runtime->cfg->debug.select_skips_loser_settle;
}

bool fault_join_set_hands_to_waiter() noexcept {
    return tl_runtime && tl_runtime->cfg->debug.join_set_hands_to_waiter;
}
#endif

void throw_no_spawn_target() {
    throw std::logic_error(
        "blitz::spawn: no runtime on this thread; call runtime::spawn from outside a task");
}

void set_current_runtime(const runtime_context* r) noexcept { tl_runtime = r; }

task_header* suspend_current(std::coroutine_handle<> h, ready_fn ready, ready_hook* hook,
                             describe_fn describe) {
    task_header* t = current_task();
    if (!t) {
        throw std::logic_error(
            "blitz: this awaitable must be awaited inside a blitz task (one spawned on a "
            "runtime or run by runtime::block_on)");
    }
    if (ready) {
        assert(hook && "suspend_current: a readiness check needs its awaitable (the hook)");
        hook->ready_check = ready;
#if BLITZ_INSPECT
        hook->describe = describe;
#endif
    } else {
        hook = nullptr;  // ready on any poll
    }
    if (select_scope* s = t->scope_) {
        s->record(h, hook);  // one branch of a select suspends
        return t;
    }
    t->resume_point_ = h;
    t->ready_ = hook;
    return t;
}

}  // namespace blitz::detail
