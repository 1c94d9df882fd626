// SPDX-License-Identifier: MIT
#pragma once
// timer_driver: the runtime's clock and timer wheel, shared by all workers (T4-T6, I5).

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/timer_slot.hpp"
#include "time/timer_wheel.hpp"

namespace blitz::detail {

// One per runtime: converts instants to 1 ms ticks, keeps the wheel under a mutex and fires due
// timers through their wakers.
//
// Protocol:
//   1. arm(): rounds the deadline up to a tick (never early) and links the slot; a deadline
//      already reached is refused and the caller proceeds at once.
//   2. fire_due(): any worker calls it at the start of a tick (try-lock, so workers never queue
//      up). The wheel moves due entries to a pending list; wakers are taken out in batches of 32
//      under the lock and woken after it is released.
//   3. disarm(): unlinks a slot that has not fired (from the wheel or the pending list) and
//      drops its waker; false once the waker was taken (that wake is on its way).
//   4. next_expiry(): when the earliest armed timer is due (real clock only), what a parking
//      worker's sleep is bounded by. An arm that makes it earlier calls the listener (after
//      the lock is released), so the driver stack can wake a worker whose sleep would end later
//      (I5, T7).
//   5. paused clock: time moves only by advance(), which fires everything due before returning.
//
// Invariants: a slot is in exactly one of: unarmed, wheel, pending, fired; `fired` is set only
// after its waker was taken; next_tick_ is never later than the wheel's next expiration.
// Memory ordering: fired is stored with release after the waker is taken and loaded with acquire
// by the awaitable's readiness check; the wake itself then orders via the task state word.
// next_tick_ is stored and loaded seq_cst: a parking worker publishes its planned wake-up and
// then re-reads next_tick_, while an arm stores next_tick_ and then reads the planned wake-ups;
// one of the two sees the other (the store-load pattern needs the single total order).
// Thread-safety: every method from any thread.
class timer_driver {
public:
    using clock = std::chrono::steady_clock;
    using duration = std::chrono::nanoseconds;
    static constexpr duration tick = std::chrono::milliseconds(1);

    // Told when an arm moved the earliest expiry earlier (real clock only), with the new one.
    // Called on the arming thread without the driver's lock; must not arm or disarm.
    class earlier_listener {
    public:
        virtual void expiry_moved_earlier(clock::time_point at) noexcept = 0;

    protected:
        ~earlier_listener() = default;
    };

    // Deliberate faults (config::debug) that make deadlines early: `one_tick` (T4's control on the
    // virtual clock) and `half_wait` (T6's on the real clock, where a wake's lateness can hide a
    // tick: a timer fires once half of its wait has passed).
    enum class early_fault : std::uint8_t { none, one_tick, half_wait };
    explicit timer_driver(bool paused, early_fault early = early_fault::none);
    // Before any timer is armed. `fault_skip` (config::debug, T7's control) never calls it.
    void set_listener(earlier_listener* l, bool fault_skip = false) noexcept {
        listener_ = fault_skip ? nullptr : l;
    }

    clock::time_point now() const noexcept;
    bool paused() const noexcept { return paused_; }

    bool arm(timer_slot& s, clock::time_point deadline, waker w);
    bool disarm(timer_slot& s) noexcept;

    // Fires every due timer; returns the number fired. `wait` blocks for the lock instead of
    // giving up when another thread is firing.
    std::size_t fire_due(bool wait = false);
    // The earliest armed timer's due instant; nullopt when none is armed or the clock is paused
    // (virtual time does not pass while a worker sleeps).
    std::optional<clock::time_point> next_expiry() const noexcept;
    void advance(duration d);  // paused clock only
    // Paused clock only: moves it to the earliest armed timer's due instant (if it is later
    // than now) and fires what is due. False, with nothing done, when no timer is armed.
    bool advance_to_next();

    std::size_t pending() const;  // armed timers (in the wheel or about to fire)
    std::uint64_t fired_total() const noexcept { return fired_.load(std::memory_order_relaxed); }
    std::uint64_t cascades() const;

private:
    std::uint64_t deadline_tick(clock::time_point t) const noexcept;
    std::uint64_t now_tick() const noexcept;
    void publish_next() noexcept BLITZ_REQUIRES(mu_);
    // Takes the wakers out in batches and wakes each batch with mu_ released; returns the count.
    std::size_t drain_pending() BLITZ_REQUIRES(mu_);

    const bool paused_;
    [[maybe_unused]] const early_fault early_;  // read only in the faults build
    const clock::time_point origin_;
    earlier_listener* listener_ = nullptr;
    atomic<std::int64_t> virtual_offset_ns_{0};  // paused clock: time advanced so far
    mutable mutex mu_;
    timer_wheel wheel_ BLITZ_GUARDED_BY(mu_);
    timer_entry* pending_ BLITZ_GUARDED_BY(mu_) = nullptr;  // fired by the wheel, waker not taken
    std::size_t pending_count_ BLITZ_GUARDED_BY(mu_) = 0;
    alignas(cache_line) atomic<std::uint64_t> next_tick_{UINT64_MAX};
    atomic<std::uint64_t> fired_{0};
};

}  // namespace blitz::detail
