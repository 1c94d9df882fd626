// SPDX-License-Identifier: MIT
#include "blitz/sync/cancellation_token.hpp"

#include "blitz/detail/mutex.hpp"

namespace blitz {

void cancellation_token::cancel() const {
    std::vector<std::weak_ptr<detail::cancel_state>> children;
    {
        detail::wake_batch b;
        detail::unique_lock l(s_->mu);
        if (s_->cancelled.load(std::memory_order_relaxed)) return;
        s_->cancelled.store(true, std::memory_order_release);  // pairs with is_cancelled
        children.swap(s_->children);
        detail::wake_all(s_->waiters, s_->mu, b);
        l.unlock();
        b.flush();
    }
    for (auto& c : children) {
        if (auto s = c.lock()) cancellation_token(std::move(s)).cancel();
    }
}

cancellation_token cancellation_token::child_token() const {
    cancellation_token child;
    {
        detail::lock_guard l(s_->mu);
        if (!s_->cancelled.load(std::memory_order_relaxed)) {
            // Drop children that are gone before adding, so the list tracks live tokens.
            std::erase_if(s_->children, [](const auto& w) { return w.expired(); });
            s_->children.push_back(child.s_);
            return child;
        }
    }
    child.cancel();
    return child;
}

bool cancellation_token::awaiter::await_suspend(std::coroutine_handle<> h) {
    detail::task_header* t = detail::suspend_current(h, &ready, this, &describe);
    detail::lock_guard l(s_->mu);
    if (s_->cancelled.load(std::memory_order_relaxed)) return false;
    node_.w = t->make_waker();
    s_->waiters.push_back(&node_);
    return true;
}

cancellation_token::awaiter::~awaiter() {
    detail::lock_guard l(s_->mu);
    if (node_.linked()) {
        node_.unlink();
        node_.w.reset();
    }
}

}  // namespace blitz
