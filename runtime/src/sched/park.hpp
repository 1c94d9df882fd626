// SPDX-License-Identifier: MIT
#pragma once
// park_driver: everything the workers know about timers and I/O. rt/ implements it with its
// driver stack (the timer driver today, the I/O driver next); sched/ sees only this.

#include <chrono>
#include <cstddef>

#include "sched/parker.hpp"

namespace blitz::detail {

// Why a park ended.
enum class park_wake { timeout, token, events };

// Thread-safety: every method from any worker thread; unpark() from any thread.
class park_driver {
public:
    // Non-blocking work due at the start of every tick (B1): fire due timers, later reap I/O
    // completions. Returns how many tasks it woke (probes only).
    virtual std::size_t maintain() noexcept = 0;
    // Sleeps on `p` (worker `index`'s parker; the caller's bit in the parked bitmap is set) for
    // at most `max`, and no longer than the drivers need (the next timer expiry, I5): in the I/O
    // driver if no other worker is, else on the futex. Returns token iff woken by an unpark of
    // `p` (consumed), events if I/O events ended the sleep, else timeout.
    virtual park_wake park(unsigned index, parker& p, std::chrono::nanoseconds max) noexcept = 0;
    // Wakes worker `index`, sleeping on `p`, or makes its next park return at once.
    virtual void unpark(unsigned index, parker& p) noexcept = 0;
    // Busy mode's look while a worker spins instead of parking: fire due timers and look at
    // the I/O driver without blocking (no idle gap: a busy worker pays the epoll syscall; on
    // io_uring the look is a completion-queue read). Returns how many timers fired.
    virtual std::size_t busy_poll() noexcept { return maintain(); }
    // The end of a tick that polled tasks: work the tasks staged for the drivers goes out in
    // one batch (I/O submissions, IO.md 7.2).
    virtual void end_tick() noexcept {}
    // First and last thing on worker `index`'s thread (busy mode: the worker's own I/O ring is
    // enabled for it, and drained by it before it exits).
    virtual void worker_started(unsigned /*index*/) noexcept {}
    virtual void worker_stopping(unsigned /*index*/) noexcept {}
    // True while the calling busy worker must not park (I/O only it can reap is in flight).
    virtual bool busy_must_spin() noexcept { return false; }
    // Completion operations in flight on worker `index`'s own ring (only it reaps them); any
    // thread (the stall detector reads it).
    virtual std::uint64_t worker_ops_in_flight(unsigned /*index*/) const noexcept { return 0; }

protected:
    ~park_driver() = default;
};

}  // namespace blitz::detail
