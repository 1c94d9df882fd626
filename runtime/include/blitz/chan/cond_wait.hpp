// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// cond_awaiter: waits until a condition over a channel's state holds. The building block of the
// oneshot, unbounded, broadcast and watch channels.
//
// Protocol: the condition is evaluated under the channel's mutex. A waiter links itself (with
// its task's waker) under that mutex when the condition is false; a producer that may have made
// it true wakes every linked waiter (wake_all, under the mutex; wakers called after release).
// A woken waiter re-checks in its readiness check, under the mutex, before its task resumes: if
// the condition went false again it re-links with a fresh waker and stays suspended. So a wake
// is never lost and a stray one is harmless.
//
// A producer that changes the condition without the mutex (the watch channel's lock-free send)
// passes a count of linked waiters: a waiter raises it (seq_cst) after linking and then checks
// the condition once more; the producer publishes its change (seq_cst) and then reads the count,
// taking the mutex to wake only when it is not zero. One of the two always sees the other.

#include <coroutine>
#include <cstdint>
#include <mutex>

#include "blitz/detail/context.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/wait_list.hpp"
#include "blitz/yield.hpp"

namespace blitz::detail {

template <class Pred>
class [[nodiscard]] cond_awaiter : private ::blitz::detail::ready_hook {
public:
    // linked: the count of linked waiters the producer reads (nullptr: producers take mu).
    cond_awaiter(detail::mutex& mu, wait_queue& q, Pred pred,
                 detail::atomic<std::uint32_t>* linked = nullptr)
        : mu_(mu), q_(q), pred_(std::move(pred)), node_(this), linked_(linked) {}
    cond_awaiter(const cond_awaiter&) = delete;
    cond_awaiter& operator=(const cond_awaiter&) = delete;
    ~cond_awaiter() {
        if (!suspended_) return;
        detail::lock_guard l(mu_);
        if (node_.linked()) {
            unlink();
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
        task_ = suspend_current(h, &ready, this, &describe);
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
        node_.w = task_->make_waker();
        if (!link()) {
            node_.w.reset();
            return false;
        }
        suspended_ = true;
        return true;
    }
    void await_resume() const noexcept {}
    // What the task dump calls this wait (a static string) and the primitive it names.
    void set_label(const char* what, const void* object) noexcept {
        label_ = what;
        object_ = object;
    }

private:
    static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
        const auto* a = static_cast<const cond_awaiter*>(p);
        out.kind = a->label_;
        out.object = a->object_;
    }
    static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
        auto* a = const_cast<cond_awaiter*>(static_cast<const cond_awaiter*>(p));
        if (!a->node_.done.load(std::memory_order_acquire)) return false;  // still linked
        detail::lock_guard l(a->mu_);
        if (a->pred_()) return true;
        // Woken, but the condition no longer holds: wait again, with a fresh waker.
        a->node_.done.store(false, std::memory_order_relaxed);
        a->node_.w = a->task_->make_waker();
        if (a->link()) return false;
        a->node_.w.reset();
        a->node_.done.store(true, std::memory_order_relaxed);
        return true;
    }
    // Links the node (under mu_); false if the condition turned true meanwhile, seen through
    // the linked count (the node is then unlinked again).
    bool link() BLITZ_REQUIRES(mu_) {
        q_.push_back(&node_);
        if (!linked_) return true;
        linked_->fetch_add(1, std::memory_order_seq_cst);  // seq_cst: then read the condition
        // (the model's cond_link_no_recheck control leaves the second look out)
        if (BLITZ_MODEL_DEFECT(cond_link_no_recheck) || !pred_()) return true;
        unlink();
        return false;
    }
    void unlink() BLITZ_REQUIRES(mu_) {
        node_.unlink();
        if (linked_) linked_->fetch_sub(1, std::memory_order_relaxed);
    }

    detail::mutex& mu_;
    wait_queue& q_;
    Pred pred_;
    wait_node node_;
    detail::atomic<std::uint32_t>* linked_;
    const char* label_ = "condition wait";
    const void* object_ = nullptr;
    task_header* task_ = nullptr;
    bool suspended_ = false;
    bool coop_yield_ = false;
};

}  // namespace blitz::detail
