// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "base/atomic.hpp"
#include "io/io_driver.hpp"
#include "sched/park.hpp"
#include "sched/scheduler.hpp"
#include "time/timer_driver.hpp"

namespace blitz::detail {

// driver_stack: the drivers a parked worker waits in (the timer driver and the I/O driver),
// stacked behind sched/'s park interface, and the protocol of who sleeps where.
//
// Protocol:
//   1. Every tick starts with maintain(): due timers fire; while descriptors are registered the
//      I/O driver is looked at without blocking (B1: a completion-queue peek on io_uring; on
//      epoll a zero-timeout wait, only once no turn happened for io_poll_gap); then the
//      hand-off check (step 5).
//   2. park() plans the worker's wake-up (the next timer expiry or `max`, whichever is first,
//      I5) and sleeps: in the I/O driver if descriptors are registered and its try-lock is
//      free (exactly one worker sleeps there, O2), else on the worker's futex, counted in
//      futex_parked_.
//   3. unpark() hands the parker its token and, when the worker sleeps in the I/O driver or
//      its own ring, interrupts that wait (an eventfd write, coalesced).
//   2a. On io_uring with a ring per worker, a worker whose ring has operations in flight sleeps
//      in its ring instead (only it can reap them, IO.md 7.6): if it takes the driver's lock
//      it also watches the shared ring from there (a one-shot poll of the shared ring's
//      descriptor) and turns the driver when that fires; otherwise it counts in futex_parked_,
//      so hand-off (step 5) can wake it to take the driver.
//   4. Timer coverage (T7): while a timer is armed and some worker is parked, one parked
//      worker plans to wake by the earliest expiry. An arm that moves the expiry earlier, a
//      parked worker leaving its park and a worker firing timers each check it, and wake one
//      parked worker (a claim through the scheduler, I2/I3) when nobody covers it.
//   5. Driver hand-off (O4): a worker that leaves the I/O driver, or looks at it at a tick
//      start, while workers sleep on futexes and none in the driver, wakes one of them, which
//      then parks in the driver: I/O never waits behind a worker stuck in a long poll.
//   6. Busy mode (io_mode = busy): busy_poll() replaces the park; it fires timers, reaps the
//      worker's own ring, runs the kernel's deferred completion work and turns the driver.
//
// Invariants:
//   - At most one worker sleeps in the I/O driver (its try-lock), and driver_parked_ says so
//     while it does.
//   - futex_parked_ counts the workers asleep on their futexes or in their own rings without
//     the driver's lock.
//   - A parked worker's plan holds its wake-up time; a running worker's plan holds `awake`.
//
// Memory ordering: the plans and the expiry are a store-then-load on both sides (a parking
// worker stores its plan and re-reads the expiry; an arm stores the expiry and reads the
// plans), and so are futex_parked_ and the driver's lock (a worker counts itself, then tries
// the lock again; hand-off reads the count after the lock is let go): seq_cst on each, so one
// side of every race sees the other.
//
// Thread-safety: park from worker threads (each with its own index); the rest from any thread.
class driver_stack final : public park_driver, private timer_driver::earlier_listener {
public:
    struct faults {
        bool no_timer_wake = false;   // T7's control
        bool no_driver_wake = false;  // O2's control
        bool no_handoff = false;      // O4's control
    };
    driver_stack(timer_driver& timers, io_driver* io, unsigned workers, faults f);
    // Before any task exists: the scheduler whose parked workers coverage wakes.
    void attach(scheduler* s) noexcept { sched_.store(s, std::memory_order_release); }
    std::size_t maintain() noexcept override;
    std::size_t busy_poll() noexcept override;
    void worker_started(unsigned index) noexcept override;
    void worker_stopping(unsigned index) noexcept override;
    bool busy_must_spin() noexcept override;
    std::uint64_t worker_ops_in_flight(unsigned index) const noexcept override;
    park_wake park(unsigned index, parker& p, std::chrono::nanoseconds max) noexcept override;
    void unpark(unsigned index, parker& p) noexcept override;
    void end_tick() noexcept override;

private:
    void expiry_moved_earlier(timer_driver::clock::time_point at) noexcept override;
    // Wakes a parked worker unless one plans to wake by `at` (or nobody is parked).
    void cover(timer_driver::clock::time_point at) noexcept;
    void cover_next() noexcept;
    // Publishes worker `index`'s planned wake-up: the next expiry or `max` from now, whichever
    // is first. Returns how long to sleep.
    std::chrono::nanoseconds plan_wake(unsigned index, std::chrono::nanoseconds max) noexcept;
    void unplan(unsigned index) noexcept;
    // Takes the driver's lock (true) or counts the caller in futex_parked_ (false);
    // release_driver undoes whichever it did.
    bool claim_driver() noexcept;
    void release_driver(bool holder) noexcept;
    // Sleeps in the driver (the holder) or in the caller's own ring (`in_ring`; with `holder` it
    // watches the shared ring from there) until events, a token or `sleep` passes.
    park_wake sleep_in_driver(parker& p, std::chrono::nanoseconds sleep, bool in_ring,
                              bool holder) noexcept;
    void hand_off() noexcept;

    // The least time between two zero-timeout polls of the epoll backend at tick starts.
    static constexpr std::chrono::nanoseconds io_poll_gap = std::chrono::microseconds(50);
    static constexpr std::int64_t awake = INT64_MIN;
    struct alignas(cache_line) plan {
        atomic<std::int64_t> wake_ns{awake};  // steady_clock ns, or awake
    };
    timer_driver& timers_;
    io_driver* const io_;
    const unsigned workers_;
    const faults faults_;
    std::unique_ptr<plan[]> plans_;
    atomic<scheduler*> sched_{nullptr};
    alignas(cache_line) atomic<unsigned> futex_parked_{0};  // parked, but not in the I/O driver
    atomic<bool> driver_parked_{false};                     // a worker sleeps in the I/O driver
};

}  // namespace blitz::detail
