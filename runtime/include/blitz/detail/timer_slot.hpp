// SPDX-License-Identifier: MIT
#pragma once
// timer_entry and timer_slot: what an awaitable embeds to wait on the timer wheel, so arming a
// timer allocates nothing. The wheel and its driver are private (runtime/src/time/).

#include <atomic>
#include <cstdint>

#include "blitz/detail/atomic.hpp"
#include "blitz/waker.hpp"

namespace blitz::detail {

// A timer's link into the wheel (see timer_wheel.hpp for how the fields are used).
struct timer_entry {
    static constexpr std::uint8_t overflow_level = 5;
    static constexpr std::uint8_t pending_level = 6;  // fired by the wheel, waker not yet taken
    static constexpr std::uint8_t unlinked = 0xFF;

    std::uint64_t deadline = 0;  // in ticks
    timer_entry* prev = nullptr;
    timer_entry* next = nullptr;
    std::uint8_t level = unlinked;  // 0-4: wheel level; 5: overflow list; 6: pending list
    std::uint8_t slot = 0;

    bool linked() const noexcept { return level != unlinked; }
};

// An entry plus the waker to call when it fires and the flag readiness checks read.
struct timer_slot : timer_entry {
    waker w;                            // guarded by its shard's lock until taken
    detail::atomic<bool> fired{false};  // set (release) after the waker was taken
    // The driver shard arm() linked it into; read by disarm(), which the slot's owner calls
    // after its arm (never concurrently with it).
    std::uint32_t shard = 0;
};

}  // namespace blitz::detail
