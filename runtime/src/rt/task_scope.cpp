// SPDX-License-Identifier: MIT
#include "blitz/task_scope.hpp"

#include <thread>

#include "blitz/detail/mutex.hpp"
#include "blitz/detail/select_scope.hpp"
#include "task/context_internal.hpp"

namespace blitz {

task_scope::task_scope() : s_(std::make_shared<detail::scope_state>()), drop_wait_(this) {
    owner_ = detail::current_task();
    n_hooks_ = detail::select_scope::add_hooks(owner_, hooks_, max_hooks);
    for (unsigned i = 0; i < n_hooks_; ++i) {
        hooks_[i].settle = &task_scope::settle;
        hooks_[i].ctx = this;
    }
}

task_scope::~task_scope() {
    detail::select_scope::remove_hooks(hooks_, n_hooks_);
    {
        detail::lock_guard l(s_->mu);
        if (drop_wait_.linked()) drop_wait_.unlink();
        drop_wait_.w.reset();
    }
    abort_and_wait_blocking();
}

bool task_scope::settle(detail::drop_hook* h) noexcept {
    auto* self = static_cast<task_scope*>(h->ctx);
    self->s_->abort_all();
    detail::lock_guard l(self->s_->mu);
    if (self->s_->live == 0) return true;
    if (!self->drop_wait_.linked()) {  // woken when the last task goes
        self->drop_wait_.done.store(false, std::memory_order_relaxed);
        self->drop_wait_.w = self->owner_->make_waker();
        self->s_->waiters.push_back(&self->drop_wait_);
    }
    return false;
}

void task_scope::abort_and_wait_blocking() noexcept {
    {
        detail::lock_guard l(s_->mu);
        if (s_->live == 0) return;
    }
    s_->abort_all();
    // A runtime shutting down destroys the rest itself (its workers are gone: waiting would hang).
    if (detail::draining_runtime()) return;
    for (;;) {
        {
            detail::lock_guard l(s_->mu);
            if (s_->live == 0) return;
        }
        std::this_thread::yield();
    }
}

}  // namespace blitz
