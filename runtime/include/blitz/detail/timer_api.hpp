// SPDX-License-Identifier: MIT
#pragma once
// The runtime's timer services, as seen from the public time awaitables.

#include <chrono>

#include "blitz/detail/timer_slot.hpp"

namespace blitz::detail {

class timer_driver;
using time_point = std::chrono::steady_clock::time_point;

// The timer driver of the runtime running the calling task; throws std::logic_error elsewhere.
timer_driver& current_timers();
// The driver's clock (virtual in paused-time mode).
time_point timers_now(const timer_driver& d) noexcept;
// Arms `s` to wake `w` at `deadline`; false if the deadline has passed (nothing armed).
bool timers_arm(timer_driver& d, timer_slot& s, time_point deadline, waker w);
// Disarms `s` if it has not fired; true if it was removed before firing.
bool timers_disarm(timer_driver& d, timer_slot& s) noexcept;

// now + d, saturating at time_point::max() instead of overflowing (a deadline beyond the
// clock's range means "never").
inline time_point saturating_add(time_point now, std::chrono::nanoseconds d) noexcept {
    if (d <= std::chrono::nanoseconds::zero()) return now;
    if (d > time_point::max() - now) return time_point::max();
    return now + d;
}

}  // namespace blitz::detail
