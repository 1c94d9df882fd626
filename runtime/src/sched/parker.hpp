// SPDX-License-Identifier: MIT
#pragma once
// parker: puts one worker thread to sleep on a futex word until unparked or timed out (I5).

#include <chrono>
#include <cstdint>

#include "base/atomic.hpp"

namespace blitz::detail {

// A one-token futex parker. The word moves between four values:
//   empty (0) --park--> parked (1) --unpark--> notified (2) --park returns--> empty
//   empty --unpark--> notified: the token waits for the next park, which returns at once.
//   empty --enter_driver--> in_driver (3) --unpark--> notified: the owner sleeps in the I/O
//   driver instead of on the futex, so unpark() tells its caller to wake the driver.
//   empty --enter_ring--> in_ring (4) --unpark--> notified: the owner sleeps in its own
//   io_uring ring (a parked worker with operations in flight there), so unpark() tells its
//   caller to wake that ring.
//
// Invariants: an unpark is never lost: it either finds the word parked and wakes the futex, or
// leaves the token for the next park. At most one token is stored (unparks do not accumulate).
// Memory ordering: unpark's exchange is release and park's exchange is acquire on the same word,
// so everything the unparker wrote before unpark() is visible after park() returns `true`. No
// standalone fences (ThreadSanitizer follows this handoff).
// Thread-safety: park() from the owner thread only; unpark() from any thread.
class parker {
public:
    // Where the owner sleeps, as far as an unparker must act beyond storing the token.
    enum class sleeper { elsewhere, driver, ring };

    // Sleeps until unparked or `timeout` passes. Returns true iff a token was consumed.
    bool park(std::chrono::nanoseconds timeout) noexcept;
    // Stores the token; returns driver (ring) if the owner sleeps in the I/O driver (its own
    // ring), which the caller must then wake (the futex is woken here when the owner sleeps on
    // it).
    sleeper unpark() noexcept;
    // Owner: about to sleep in the I/O driver (its own ring). False if a token was waiting
    // (consumed: do not sleep).
    bool enter_driver() noexcept { return enter(in_driver); }
    bool enter_ring() noexcept { return enter(in_ring); }
    // Owner: back from the driver or its ring. True iff a token arrived meanwhile (consumed).
    bool leave_driver() noexcept;
    // Owner, in the driver: whether a token has arrived (not consumed).
    bool token_waiting() const noexcept {
        return word_.load(std::memory_order_acquire) == notified;
    }
    // I5's negative control: unpark stores the token but never wakes the futex, so a thread
    // already asleep misses it until its timeout. Set before the parker is shared.
    void set_fault_skip_futex_wake(bool on) noexcept { fault_skip_wake_ = on; }
    // Consumes a pending token without sleeping; true if there was one.
    bool try_consume() noexcept;

private:
    static constexpr std::uint32_t empty = 0, parked = 1, notified = 2, in_driver = 3, in_ring = 4;
    bool enter(std::uint32_t where) noexcept;
    alignas(cache_line) atomic<std::uint32_t> word_{empty};
    bool fault_skip_wake_ = false;
};

}  // namespace blitz::detail
