#pragma once
// Timers: sleep, sleep_until, interval, timeout and timeout_at.

#include <chrono>
#include <coroutine>
#include <optional>
#include <stdexcept>
#include <utility>

#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/timer_api.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace blitz {

using instant = std::chrono::steady_clock::time_point;

// The clock of the runtime running the calling task (virtual in paused-time mode), or
// steady_clock on a plain thread.
instant now() noexcept;

// Awaitable that completes at `deadline` (never before it; timers have 1 ms resolution, so it
// completes within the millisecond after). A deadline already passed completes at once; one
// beyond the clock's range (instant::max()) never completes. Destroying it while pending removes
// its timer (nothing fires afterwards).
//
// Thread-safety: await it from one task; it is neither copyable nor movable once created.
class sleep_until_awaiter {
public:
    explicit sleep_until_awaiter(instant deadline) noexcept : deadline_(deadline) {}
    sleep_until_awaiter(const sleep_until_awaiter&) = delete;
    sleep_until_awaiter& operator=(const sleep_until_awaiter&) = delete;
    ~sleep_until_awaiter() { cancel(); }

    bool await_ready() {
        drv_ = &detail::current_timers();
        return detail::timers_now(*drv_) >= deadline_;
    }
    bool await_suspend(std::coroutine_handle<> h) {
        detail::task_header* t = detail::suspend_current(h, &ready, this);
        armed_ = detail::timers_arm(*drv_, slot_, deadline_, t->make_waker());
        return armed_;  // not armed: already due, continue at once
    }
    void await_resume() noexcept { armed_ = false; }

    instant deadline() const noexcept { return deadline_; }

private:
    static bool ready(const void* a) noexcept {
        // acquire: pairs with the driver's release store after it took the waker
        return static_cast<const sleep_until_awaiter*>(a)->slot_.fired.load(
            std::memory_order_acquire);
    }
    void cancel() noexcept {
        if (armed_) detail::timers_disarm(*drv_, slot_);
        armed_ = false;
    }

    instant deadline_;
    detail::timer_driver* drv_ = nullptr;
    detail::timer_slot slot_;
    bool armed_ = false;
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

// Waits for whichever comes first: the task behind `h` completes, or `deadline`. Both sides
// register a waker for the calling task; the loser's wake, if it still comes, is a stray wake
// that readiness checks absorb.
template <class T>
class join_or_deadline {
public:
    join_or_deadline(join_handle<T>& h, instant deadline) : h_(h), deadline_(deadline) {}
    join_or_deadline(const join_or_deadline&) = delete;
    ~join_or_deadline() { disarm(); }

    bool await_ready() {
        drv_ = &current_timers();
        return h_.is_finished() || timers_now(*drv_) >= deadline_;
    }
    bool await_suspend(std::coroutine_handle<> c) {
        task_header* me = suspend_current(c, &ready, this);
        joined_ = h_.register_join_waker(me->make_waker());
        if (!joined_) return false;  // finished meanwhile
        armed_ = timers_arm(*drv_, slot_, deadline_, me->make_waker());
        if (!armed_) {
            disarm();
            return false;  // the deadline passed meanwhile
        }
        return true;
    }
    // True if the task finished (its result is waiting in the handle), false on timeout.
    bool await_resume() {
        disarm();
        return h_.is_finished();
    }

private:
    static bool ready(const void* a) noexcept {
        auto* self = static_cast<const join_or_deadline*>(a);
        return self->h_.is_finished() || self->slot_.fired.load(std::memory_order_acquire);
    }
    void disarm() noexcept {
        if (joined_) h_.unregister_join_waker();
        if (armed_) timers_disarm(*drv_, slot_);
        joined_ = armed_ = false;
    }

    join_handle<T>& h_;
    instant deadline_;
    timer_driver* drv_ = nullptr;
    timer_slot slot_;
    bool joined_ = false;
    bool armed_ = false;
};

// Awaits `h` until `deadline`: its value (or exception) if it finishes first, else timed out
// (aborting the task if asked). `h` must outlive the returned task.
template <class T>
task<timeout_result<T>> await_until(join_handle<T>& h, instant deadline, bool abort_on_timeout) {
    // A named awaiter: g++ 12 mishandles co_await on a temporary with a destructor inside an
    // if-condition (the awaiter is never called).
    join_or_deadline<T> race(h, deadline);
    const bool finished = co_await race;
    if (!finished) {
        if (abort_on_timeout) h.abort();
        co_return timeout_result<T>::timed_out_result();
    }
    if constexpr (std::is_void_v<T>) {
        co_await h;  // rethrows the task's exception, if any
        co_return timeout_result<void>();
    } else {
        co_return timeout_result<T>(co_await h);
    }
}

// Owns the handle of a task spawned by timeout_at for as long as the wait lasts.
template <class T>
task<timeout_result<T>> await_owned_until(join_handle<T> h, instant deadline) {
    co_return co_await await_until(h, deadline, /*abort_on_timeout=*/true);
}

}  // namespace detail

// Runs `t` (spawned as its own task) and waits at most until `deadline`. On timeout the task is
// aborted and the result says timed_out(); otherwise it carries the value (an exception of the
// task is rethrown). Await the returned task. Any other awaitable `x` can be given a deadline by
// wrapping it: timeout(d, [&]() -> task<T> { co_return co_await x; }()).
template <class T>
task<timeout_result<T>> timeout_at(instant deadline, task<T> t) {
    return detail::await_owned_until(spawn(std::move(t)), deadline);
}

template <class T>
task<timeout_result<T>> timeout(std::chrono::nanoseconds d, task<T> t) {
    return timeout_at(detail::saturating_add(now(), d), std::move(t));
}

// Waits for an already spawned task for at most `d`. On timeout the task keeps running (the
// handle is still yours); the result says timed_out(). `h` must outlive the returned task.
template <class T>
task<timeout_result<T>> timeout(std::chrono::nanoseconds d, join_handle<T>& h) {
    return detail::await_until(h, detail::saturating_add(now(), d), /*abort_on_timeout=*/false);
}

}  // namespace blitz
