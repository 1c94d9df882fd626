// SPDX-License-Identifier: MIT
#include "blitz/time.hpp"

#include "task/context_internal.hpp"
#include "time/timer_driver.hpp"

namespace blitz {

namespace detail {

timer_driver& current_timers() {
    if (const runtime_context* r = current_runtime()) return *r->timers;
    throw std::logic_error(
        "blitz: timers need a runtime: await sleep/interval/timeout inside a blitz task");
}
time_point timers_now(const timer_driver& d) noexcept { return d.now(); }
bool timers_arm(timer_driver& d, timer_slot& s, time_point deadline, waker w) {
    return d.arm(s, deadline, std::move(w));
}
bool timers_disarm(timer_driver& d, timer_slot& s) noexcept { return d.disarm(s); }

}  // namespace detail

instant now() noexcept {
    if (const detail::runtime_context* r = detail::current_runtime()) return r->timers->now();
    return std::chrono::steady_clock::now();
}

interval::interval(std::chrono::nanoseconds period, missed_tick_behavior behavior)
    : interval(now(), period, behavior) {}

interval::interval(instant start, std::chrono::nanoseconds period, missed_tick_behavior behavior)
    : period_(period), behavior_(behavior), next_(start) {
    if (period <= std::chrono::nanoseconds::zero()) {
        throw std::invalid_argument("blitz::interval: the period must be positive");
    }
}

instant interval::advance_schedule() {
    const instant fired = next_;
    const instant t = now();
    switch (behavior_) {
        case missed_tick_behavior::burst:
            next_ = detail::saturating_add(fired, period_);
            break;
        case missed_tick_behavior::delay:
            next_ = detail::saturating_add(t, period_);
            break;
        case missed_tick_behavior::skip: {
            next_ = detail::saturating_add(fired, period_);
            if (next_ <= t) {  // jump to the first tick of the original schedule after now
                const auto behind = (t - next_) / period_ + 1;
                next_ = detail::saturating_add(next_, period_ * behind);
            }
            break;
        }
    }
    return fired;
}

}  // namespace blitz
