// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// Timers: sleep, sleep_until, interval, timeout and timeout_at.

#include <chrono>
#include <coroutine>
#include <optional>
#include <stdexcept>
#include <utility>

#include "blitz/detail/context.hpp"
#include "blitz/detail/io_deadline.hpp"
#include "blitz/detail/select_branch.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/timer_api.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/task.hpp"

namespace blitz {

using instant = std::chrono::steady_clock::time_point;

// The clock of the runtime running the calling task (virtual in paused-time mode), or
// steady_clock on a plain thread.
instant now() noexcept;

// Awaitable that completes at `deadline` (never before it; timers have 1 ms resolution, so it
// completes within the millisecond after). A deadline already passed completes at once, spending
// one unit of the task's cooperative budget (B2; Tokio's Sleep does the same): with none left it
// yields first, so a loop over elapsed deadlines (an interval catching up in burst mode) cannot
// keep its worker. One beyond the clock's range (instant::max()) never completes. Destroying it
// while pending removes its timer (nothing fires afterwards).
//
// Thread-safety: await it from one task; it is neither copyable nor movable once created.
class sleep_until_awaiter : private ::blitz::detail::ready_hook {
public:
    explicit sleep_until_awaiter(instant deadline) noexcept : deadline_(deadline) {}
    sleep_until_awaiter(const sleep_until_awaiter&) = delete;
    sleep_until_awaiter& operator=(const sleep_until_awaiter&) = delete;
    ~sleep_until_awaiter() { cancel(); }

    bool await_ready() {
        drv_ = &detail::current_timers();
        if (detail::timers_now(*drv_) < deadline_) return false;
        if (detail::coop_exhausted()) {
            coop_yield_ = true;  // due, but the poll's budget is spent: yield first (B2)
            return false;
        }
        detail::coop_spend();
        return true;
    }
    bool await_suspend(std::coroutine_handle<> h) {
        detail::task_header* t = detail::suspend_current(h, &ready, this, &describe);
        if (coop_yield_) {
            detail::mark_yielded(t);  // to the back of the ring; due when it runs again
            return true;
        }
        armed_ = detail::timers_arm(*drv_, slot_, deadline_, t->make_waker());
        if (!armed_) detail::coop_spend();  // already due after all: completes at once
        return armed_;
    }
    void await_resume() noexcept {
        armed_ = false;
        if (coop_yield_) {
            coop_yield_ = false;
            detail::coop_spend();  // from the next poll's budget
        }
    }

    instant deadline() const noexcept { return deadline_; }
    // Moves the deadline; only before the first await.
    void set_deadline(instant d) noexcept { deadline_ = d; }

private:
    static bool ready(const ::blitz::detail::ready_hook* a) noexcept {
        // acquire: pairs with the driver's release store after it took the waker
        const auto* self = static_cast<const sleep_until_awaiter*>(a);
        return self->coop_yield_ || self->slot_.fired.load(std::memory_order_acquire);
    }
    static void describe(const ::blitz::detail::ready_hook* a, wait_point& out) {
        out.kind = "sleep";
        out.deadline = static_cast<const sleep_until_awaiter*>(a)->deadline_;
        out.provable = out.deadline == instant::max();  // never ends
    }
    void cancel() noexcept {
        if (armed_) detail::timers_disarm(*drv_, slot_);
        armed_ = false;
    }

    instant deadline_;
    detail::timer_driver* drv_ = nullptr;
    detail::timer_slot slot_;
    bool armed_ = false;
    bool coop_yield_ = false;  // due with no budget left: yielded instead of completing
};

// `co_await blitz::sleep_until(t)`.
inline sleep_until_awaiter sleep_until(instant deadline) noexcept {
    return sleep_until_awaiter(deadline);
}

// `co_await blitz::sleep(d)`: completes no earlier than d after the call. Zero or negative
// durations complete at once; durations past the clock's range never complete. Call it inside a
// task so that, in paused-time mode, "now" is the runtime's virtual clock.
inline sleep_until_awaiter sleep(std::chrono::nanoseconds d) {
    return sleep_until_awaiter(detail::saturating_add(now(), d));
}

// What an interval does when ticks were missed (its task ran late):
//   burst: fire the missed ticks back to back until caught up (the schedule is kept);
//   delay: the next tick comes one period after the late one (the schedule shifts);
//   skip:  drop the missed ticks; the next tick is the next one on the original schedule.
enum class missed_tick_behavior { burst, delay, skip };

// A periodic timer: `co_await iv.tick()` completes at start, start + period, ... and returns the
// scheduled instant of the tick it completed (the first tick completes at once, as in Tokio).
// The one-argument constructor starts at now(): create it inside a task, so that in paused-time
// mode it reads the runtime's virtual clock (or pass `start` explicitly).
//
// Thread-safety: one task at a time.
class interval {
public:
    interval(std::chrono::nanoseconds period,
             missed_tick_behavior behavior = missed_tick_behavior::burst);
    interval(instant start, std::chrono::nanoseconds period,
             missed_tick_behavior behavior = missed_tick_behavior::burst);

    class tick_awaiter {
    public:
        tick_awaiter(interval& iv) : iv_(iv), sleep_(iv.next_) {}
        bool await_ready() { return sleep_.await_ready(); }
        bool await_suspend(std::coroutine_handle<> h) { return sleep_.await_suspend(h); }
        instant await_resume() {
            sleep_.await_resume();
            return iv_.advance_schedule();
        }

    private:
        interval& iv_;
        sleep_until_awaiter sleep_;
    };
    tick_awaiter tick() { return tick_awaiter(*this); }

    std::chrono::nanoseconds period() const noexcept { return period_; }
    missed_tick_behavior behavior() const noexcept { return behavior_; }
    void reset() { next_ = detail::saturating_add(now(), period_); }

private:
    instant advance_schedule();  // returns the tick that fired and schedules the next

    std::chrono::nanoseconds period_;
    missed_tick_behavior behavior_;
    instant next_;
};

// Thrown by timeout_result::value() after a timeout.
class timed_out_error : public std::runtime_error {
public:
    timed_out_error() : std::runtime_error("blitz: the operation timed out") {}
};

// The outcome of timeout(): a value, or the fact that the time ran out.
template <class T>
class [[nodiscard]] timeout_result {
public:
    static timeout_result timed_out_result() { return timeout_result(); }
    explicit timeout_result(T v) : v_(std::move(v)) {}

    bool timed_out() const noexcept { return !v_.has_value(); }
    explicit operator bool() const noexcept { return v_.has_value(); }
    T& value() & {
        if (!v_) throw timed_out_error();
        return *v_;
    }
    T&& value() && {
        if (!v_) throw timed_out_error();
        return std::move(*v_);
    }

private:
    timeout_result() = default;
    std::optional<T> v_;
};

template <>
class [[nodiscard]] timeout_result<void> {
public:
    static timeout_result timed_out_result() { return timeout_result(true); }
    timeout_result() = default;
    bool timed_out() const noexcept { return timed_out_; }
    explicit operator bool() const noexcept { return !timed_out_; }
    void value() const {
        if (timed_out_) throw timed_out_error();
    }

private:
    explicit timeout_result(bool t) : timed_out_(t) {}
    bool timed_out_ = false;
};

namespace detail {

// The description of a timeout until it is awaited: the awaitable (a task by value), and a
// deadline, or a duration that starts at the first await.
template <class A>
class [[nodiscard]] timeout_op {
public:
    using value_type = timeout_result<branch_raw_result<A>>;

    timeout_op(A&& a, std::chrono::nanoseconds d)
        : args_(store_arg<A>(static_cast<A&&>(a)), nullptr), d_(d) {}
    timeout_op(A&& a, instant deadline)
        : args_(store_arg<A>(static_cast<A&&>(a)), nullptr),
          deadline_(deadline),
          relative_(false) {}
    timeout_op(const timeout_op&) = delete;
    timeout_op& operator=(const timeout_op&) = delete;
    BLITZ_AWAIT_IN_PLACE_ONLY(timeout_op, !is_blitz_task<std::remove_cvref_t<A>>::value, "timeout")

    class awaiter {
    public:
        // Keeps nothing of `op` (the promise's await_transform may destroy it first).
        explicit awaiter(timeout_op& op)
            : d_(op.d_),
              relative_(op.relative_),
              sleep_(op.deadline_),
              sel_((std::get<1>(op.args_) = &sleep_, op.args_)) {}
        bool await_ready() {
            if (relative_) sleep_.set_deadline(saturating_add(now(), d_));  // starts now
            return sel_.await_ready();
        }
        bool await_suspend(std::coroutine_handle<> c) {
            // I/O operations the branches start now carry the deadline into the kernel.
            io_deadline_scope scope(sleep_.deadline());
            return sel_.await_suspend(c);
        }
        value_type await_resume() {
            auto v = sel_.await_resume();
            if (v.index() == 1) return value_type::timed_out_result();
            if constexpr (std::is_void_v<branch_raw_result<A>>) {
                return value_type();
            } else {
                return value_type(std::move(std::get<0>(v)));
            }
        }

    private:
        std::chrono::nanoseconds d_;
        bool relative_;
        sleep_until_awaiter sleep_;
        select_awaiter<A, sleep_until_awaiter&> sel_;
    };
    awaiter operator co_await() && { return awaiter(*this); }

private:
    std::tuple<stored_arg<A>, sleep_until_awaiter*> args_;
    std::chrono::nanoseconds d_{};
    instant deadline_ = instant::max();
    bool relative_ = true;
};

}  // namespace detail

// Awaits `a` for at most `d`, counted from the first await: co_await blitz::timeout(100ms, x)
// gives a timeout_result holding x's value (an exception of x is rethrown), or timed_out().
// `a` is any awaitable a select accepts: a task runs inline in the calling task (nothing is
// spawned) and is destroyed on timeout; an awaiter such as rx.recv() is dropped on timeout,
// cancel-safely (a value granted to it goes back to the channel); a join handle keeps its task
// running and stays yours. Await it in the expression that made it.
template <class A>
detail::timeout_op<A> timeout(std::chrono::nanoseconds d, A&& a) {
    return detail::timeout_op<A>(static_cast<A&&>(a), d);
}

// Like timeout, with an absolute deadline.
template <class A>
detail::timeout_op<A> timeout_at(instant deadline, A&& a) {
    return detail::timeout_op<A>(static_cast<A&&>(a), deadline);
}

}  // namespace blitz
