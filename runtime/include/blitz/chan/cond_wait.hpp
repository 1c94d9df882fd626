// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// cond_awaiter: waits until a condition over a channel's state holds. The building block of the
// oneshot, unbounded, broadcast and watch channels.
//
// Protocol: the condition is evaluated under the channel's mutex. A waiter links itself (with
// its task's waker) under that mutex when the condition is false; a producer that may have made
// it true wakes every linked waiter (wake_all, under the mutex; wakers called after release).
// A woken waiter re-checks in its readiness check, under the mutex, before its task resumes: if
// the condition went false again it re-links with a fresh waker and stays suspended. So a wake
// is never lost and a stray one is harmless.

#include <coroutine>
#include <mutex>

#include "blitz/detail/context.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/wait_list.hpp"
#include "blitz/yield.hpp"

namespace blitz::detail {

template <class Pred>
class [[nodiscard]] cond_awaiter {
public:
    cond_awaiter(detail::mutex& mu, wait_queue& q, Pred pred)
        : mu_(mu), q_(q), pred_(std::move(pred)), node_(this) {}
    cond_awaiter(const cond_awaiter&) = delete;
    cond_awaiter& operator=(const cond_awaiter&) = delete;
    ~cond_awaiter() {
        if (!suspended_) return;
        detail::lock_guard l(mu_);
        if (node_.linked()) {
            node_.unlink();
            node_.w.reset();
        }
    }

    bool await_ready() {
        if (coop_exhausted()) {  // B2: out of budget for this poll; yield first
            coop_yield_ = true;
            return false;
        }
        detail::lock_guard l(mu_);
        if (!pred_()) return false;
        coop_spend();
        return true;
    }
    bool await_suspend(std::coroutine_handle<> h) {
        task_ = suspend_current(h, &ready, this);
        if (coop_yield_) {
            // Come back at the back of the ring; the readiness check then evaluates the
            // condition (and waits properly if it does not hold).
            suspended_ = true;
            node_.done.store(true, std::memory_order_relaxed);
            mark_yielded(task_);
            return true;
        }
        detail::lock_guard l(mu_);
        if (pred_()) return false;
        suspended_ = true;
        node_.w = task_->make_waker();
        q_.push_back(&node_);
        return true;
    }
    void await_resume() const noexcept {}

private:
    static bool ready(const void* p) noexcept {
        auto* a = const_cast<cond_awaiter*>(static_cast<const cond_awaiter*>(p));
        if (!a->node_.done.load(std::memory_order_acquire)) return false;  // still linked
        detail::lock_guard l(a->mu_);
        if (a->pred_()) return true;
        // Woken, but the condition no longer holds: wait again, with a fresh waker.
        a->node_.done.store(false, std::memory_order_relaxed);
        a->node_.w = a->task_->make_waker();
        a->q_.push_back(&a->node_);
        return false;
    }

    detail::mutex& mu_;
    wait_queue& q_;
    Pred pred_;
    wait_node node_;
    task_header* task_ = nullptr;
    bool suspended_ = false;
    bool coop_yield_ = false;
};

}  // namespace blitz::detail
