// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// The cooperative budget, in public (issue 47; invariant B2; Tokio's task::coop).
//
// Every poll of a task starts with config::coop_budget_per_poll units (128). Each await that
// completes at once on a ready resource (a free mutex, a queued value, a readable socket)
// spends one; once none are left such an await yields first, so a task whose resources are
// always ready cannot keep its worker from the others. These let code of your own take part:
//
//   co_await blitz::consume_budget();    // a loop that does CPU work and never suspends
//
//   struct cached_lookup {               // an awaitable of your own that completes at once
//       using blitz_awaitable = void;    // it suspends through blitz (blitz::awaitable)
//       bool yielded = false;
//       bool await_ready() {
//           if (!blitz::has_budget_remaining()) return false;   // out of budget: yield first
//           blitz::spend_budget();
//           return true;
//       }
//       void await_suspend(std::coroutine_handle<> h) {
//           yielded = true;
//           blitz::yield_now().await_suspend(h);   // to the back of the worker's ring
//       }
//       value await_resume() {
//           if (yielded) blitz::spend_budget();   // from the next poll's budget
//           return lookup();
//       }
//   };
//
// Outside a task (a plain thread), or with the budget off (coop_budget_per_poll = 0), the
// budget is unlimited: consume_budget never yields.

#include <coroutine>
#include <type_traits>
#include <utility>

#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/task.hpp"
#include "blitz/yield.hpp"

namespace blitz {

// True while the running task's poll has budget left (always true outside a task).
inline bool has_budget_remaining() noexcept { return !detail::coop_exhausted(); }

// Spends one unit of the running task's budget (nothing outside a task).
inline void spend_budget() noexcept { detail::coop_spend(); }

// `co_await blitz::consume_budget()`: spends one unit; when none is left it yields first (the
// task goes to the back of its worker's ring) and spends the unit from the next poll's budget.
class [[nodiscard]] consume_budget_awaiter {
public:
    bool await_ready() noexcept {
        if (detail::coop_exhausted()) return false;
        detail::coop_spend();
        return true;
    }
    void await_suspend(std::coroutine_handle<> h) {
        yielded_ = true;
        detail::mark_yielded(detail::suspend_current(h));
    }
    void await_resume() noexcept {
        if (yielded_) detail::coop_spend();
    }

private:
    bool yielded_ = false;
};
inline consume_budget_awaiter consume_budget() noexcept { return {}; }

namespace detail {
// Turns the running task's budget off for as long as it lives (its whole frame, across
// suspensions and workers), then puts back what was there: the setting, and, when that was
// on, the budget left at entry.
class unconstrained_scope {
public:
    unconstrained_scope() noexcept
        : t_(current_task()), budget_(tl_coop_budget), was_(t_ && t_->set_unconstrained(true)) {
        tl_coop_budget = -1;
    }
    unconstrained_scope(const unconstrained_scope&) = delete;
    unconstrained_scope& operator=(const unconstrained_scope&) = delete;
    ~unconstrained_scope() {
        if (!t_) return;
        t_->set_unconstrained(was_);
        if (!was_ && current_task() == t_) tl_coop_budget = budget_;
    }

private:
    task_header* t_;
    int budget_;
    bool was_;
};
}  // namespace detail

// `co_await blitz::unconstrained(t)` (or `spawn(blitz::unconstrained(t))`): runs t with the
// cooperative budget off (Tokio's task::unconstrained): its awaits on ready resources never
// yield for budget, in every poll until it finishes, whichever worker runs them. For code that
// must not be interleaved with others at those points; a loop that never suspends in it keeps
// its worker from every other task. Inside a select, the task's other branches are
// unconstrained while this one is running or suspended in it.
template <class T>
task<T> unconstrained(task<T> t) {
    detail::unconstrained_scope scope;
    if constexpr (std::is_void_v<T>) {
        co_await std::move(t);
    } else {
        co_return co_await std::move(t);
    }
}

}  // namespace blitz
