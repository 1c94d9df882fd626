// SPDX-License-Identifier: MIT
#include "rt/driver_stack.hpp"

#include <algorithm>

#include "blitz/detail/faults.hpp"
#include "task/context_internal.hpp"

namespace blitz::detail {

namespace {
std::int64_t ns_of(timer_driver::clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace

driver_stack::driver_stack(timer_driver& timers, io_driver* io, unsigned workers, faults f)
    : timers_(timers),
      io_(io),
      workers_(workers),
      faults_(f),
      plans_(std::make_unique<plan[]>(workers)) {
    timers_.set_listener(this, f.no_timer_wake);
}

void driver_stack::end_tick() noexcept {
    if (io_) io_->flush();
}

void driver_stack::worker_started(unsigned index) noexcept {
    timers_.bind_worker(index);  // this thread's arms go to its own shard
    if (io_) io_->attach_worker(index);
}

void driver_stack::worker_stopping(unsigned index) noexcept {
    if (io_) io_->detach_worker(index);
    timers_.unbind_worker();
}

bool driver_stack::busy_must_spin() noexcept { return io_ && io_->own_ring_busy(); }

std::uint64_t driver_stack::worker_ops_in_flight(unsigned index) const noexcept {
    return io_ ? io_->worker_ops_in_flight(index) : 0;
}

std::size_t driver_stack::maintain() noexcept {
    const std::size_t fired = timers_.fire_due();
    io_dispatch_scope io_wakes;  // from here on, wakes are the I/O driver's (io_ns)
    // Busy mode's own ring (a no-op elsewhere): its owner is the only one that can reap it.
    if (io_) io_->poll_own();
    if (fired) cover_next();  // the next expiry is a new one: is a parked worker planned for it?
    if (io_ && !BLITZ_FAULT(faults_.no_handoff)) {
        // B1: I/O is looked at at tick starts while descriptors are registered (a compute-only
        // runtime pays nothing). io_uring: a completion-queue peek, every tick; epoll: a
        // zero-timeout wait, a syscall, so only once no turn of the driver (by any worker)
        // happened for io_poll_gap: a worker back from the driver, or about to park in it,
        // does not pay one for nothing.
        if (io_->has_registrations() && io_->idle_for() >= io_poll_gap && io_->try_lock()) {
            io_->turn(std::chrono::nanoseconds::zero());
            io_->unlock();
        }
        hand_off();
    }
    return fired;
}

std::size_t driver_stack::busy_poll() noexcept {
    const std::size_t fired = timers_.fire_due();
    if (fired) cover_next();
    io_dispatch_scope io_wakes;  // from here on, wakes are the I/O driver's (io_ns)
    if (io_) io_->poll_own();
    if (io_ && io_->has_registrations()) {
        io_->run_task_work();  // this thread's queued completion work, if the ring flags some
        if (io_->try_lock()) {
            io_->turn(std::chrono::nanoseconds::zero());
            io_->unlock();
        }
    }
    return fired;
}

void driver_stack::hand_off() noexcept {
    // O4: sleepers on futexes and nobody in the driver. seq_cst: pairs with park's counting
    // (a worker counts itself futex-parked, then re-checks the driver lock).
    if (futex_parked_.load(std::memory_order_seq_cst) == 0) return;
    if (driver_parked_.load(std::memory_order_seq_cst) || !io_->has_registrations()) return;
    if (scheduler* s = sched_.load(std::memory_order_acquire)) s->notify_parked();
}

std::chrono::nanoseconds driver_stack::plan_wake(unsigned index,
                                                 std::chrono::nanoseconds max) noexcept {
    plan& mine = plans_[index];
    const auto now = timer_driver::clock::now();
    const auto longest = now + max;
    auto next = timers_.next_expiry();
    auto until = longest;
    for (;;) {
        until = next && *next < longest ? *next : longest;
        mine.wake_ns.store(ns_of(until), std::memory_order_seq_cst);  // then re-read: see above
        const auto again = timers_.next_expiry();
        if (again == next) break;
        next = again;  // an arm moved it meanwhile
    }
    return std::max(std::chrono::duration_cast<std::chrono::nanoseconds>(until - now),
                    std::chrono::nanoseconds::zero());
}

void driver_stack::unplan(unsigned index) noexcept {
    plans_[index].wake_ns.store(awake, std::memory_order_seq_cst);
    // This worker may have been the one planned for the next expiry. One already due is fired
    // by this worker's next tick, which checks coverage after firing.
    if (auto n = timers_.next_expiry(); n && *n > timer_driver::clock::now()) cover(*n);
}

bool driver_stack::claim_driver() noexcept {
    // Without registered descriptors there is nothing to wait for in the driver.
    const bool io = io_ && io_->has_registrations();
    if (io && io_->try_lock()) return true;
    futex_parked_.fetch_add(1, std::memory_order_seq_cst);
    // The driver may have been let go between the try-lock and the count: hand-off looks at the
    // count after releasing, so one of the two sees the other. Take it if free.
    if (io && io_->try_lock()) {
        futex_parked_.fetch_sub(1, std::memory_order_seq_cst);
        return true;
    }
    return false;
}

void driver_stack::release_driver(bool holder) noexcept {
    if (holder) {
        io_->unlock();
    } else {
        futex_parked_.fetch_sub(1, std::memory_order_seq_cst);
    }
}

park_wake driver_stack::sleep_in_driver(parker& p, std::chrono::nanoseconds sleep, bool in_ring,
                                        bool holder) noexcept {
    if (!(in_ring ? p.enter_ring() : p.enter_driver())) return park_wake::token;  // one waited
    if (holder) driver_parked_.store(true, std::memory_order_seq_cst);
    // A wait can end early with nothing to show: a wake meant for an earlier sleeper, or a
    // wait interrupted to run io_uring task work. Like the futex park, sleep on until the
    // deadline, a token or events.
    const auto deadline = std::chrono::steady_clock::now() + sleep;
    std::size_t events = 0;
    for (auto left = sleep;;) {
        {
            io_dispatch_scope io_wakes;  // wakes made by this wait are the I/O driver's
            events = in_ring ? io_->park_own(left, holder) : io_->turn(left);
        }
        if (events || p.token_waiting()) break;
        left = std::chrono::duration_cast<std::chrono::nanoseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left <= std::chrono::nanoseconds::zero()) break;
    }
    if (holder) driver_parked_.store(false, std::memory_order_seq_cst);
    if (p.leave_driver()) return park_wake::token;
    return events ? park_wake::events : park_wake::timeout;
}

park_wake driver_stack::park(unsigned index, parker& p, std::chrono::nanoseconds max) noexcept {
    const std::chrono::nanoseconds sleep = plan_wake(index, max);
    // A worker whose own ring has operations in flight sleeps there (only it can reap them),
    // holding the driver or not; otherwise the driver's holder sleeps in it, the rest on futexes.
    const bool in_ring = io_ && io_->own_ring_busy();
    const bool holder = claim_driver();
    const park_wake why = in_ring || holder ? sleep_in_driver(p, sleep, in_ring, holder)
                          : p.park(sleep)   ? park_wake::token
                                            : park_wake::timeout;
    release_driver(holder);
    unplan(index);
    return why;
}

void driver_stack::unpark(unsigned index, parker& p) noexcept {
    switch (p.unpark()) {
        case parker::sleeper::driver:
            if (!BLITZ_FAULT(faults_.no_driver_wake)) io_->wake();
            break;
        case parker::sleeper::ring:
            if (!BLITZ_FAULT(faults_.no_driver_wake)) io_->wake_worker(index);
            break;
        case parker::sleeper::elsewhere:
            break;
    }
}

void driver_stack::expiry_moved_earlier(timer_driver::clock::time_point at) noexcept { cover(at); }

void driver_stack::cover_next() noexcept {
    if (auto n = timers_.next_expiry()) cover(*n);
}

void driver_stack::cover(timer_driver::clock::time_point at) noexcept {
    const std::int64_t due = ns_of(at);
    bool anyone_parked = false;
    for (unsigned i = 0; i < workers_; ++i) {
        const std::int64_t w = plans_[i].wake_ns.load(std::memory_order_seq_cst);
        if (w == awake) continue;
        if (w <= due) return;  // covered
        anyone_parked = true;
    }
    if (!anyone_parked) return;  // running workers fire timers at the start of every tick
    if (scheduler* s = sched_.load(std::memory_order_acquire)) s->notify_parked();
}

}  // namespace blitz::detail
