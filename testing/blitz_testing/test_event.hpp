// SPDX-License-Identifier: MIT
#pragma once
// test_event: a minimal one-waiter event for runtime tests (the real primitives come with the
// sync issue). set() wakes the waiter through its waker, exactly as a real primitive would.

#include <coroutine>
#include <mutex>

#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"

namespace blitz::detail::testing {

class test_event {
public:
    void set() {
        waker w;
        {
            std::lock_guard<std::mutex> l(mu_);
            set_ = true;
            w = std::move(w_);
        }
        std::move(w).wake();  // never with the lock held
    }
    void reset() {
        std::lock_guard<std::mutex> l(mu_);
        set_ = false;
    }
    bool is_set() {
        std::lock_guard<std::mutex> l(mu_);
        return set_;
    }

    auto wait() {
        struct awaiter : private ::blitz::detail::ready_hook {
            explicit awaiter(test_event* e) noexcept : ev(e) {}
            test_event* ev;
            bool pending = false;
            bool await_ready() { return ev->is_set(); }
            bool await_suspend(std::coroutine_handle<> h) {
                task_header* t = suspend_current(h, &ready, this);
                std::lock_guard<std::mutex> l(ev->mu_);
                if (ev->set_) return false;
                ev->w_ = t->make_waker();
                pending = true;
                return true;
            }
            static bool ready(const ::blitz::detail::ready_hook* a) noexcept {
                return static_cast<const awaiter*>(a)->ev->is_set();
            }
            void await_resume() { pending = false; }
            ~awaiter() {
                if (!pending) return;
                waker w;  // dropped outside the lock
                std::lock_guard<std::mutex> l(ev->mu_);
                w = std::move(ev->w_);
            }
        };
        return awaiter{this};
    }

private:
    std::mutex mu_;
    bool set_ = false;
    waker w_;
};

}  // namespace blitz::detail::testing
