// SPDX-License-Identifier: MIT
#pragma once
// runtime_core: the composition root. It owns every part of a runtime and wires them; no other
// subsystem knows more than the interface it is handed.

#include <latch>
#include <memory>

#include "blitz/config.hpp"
#include "blitz/metrics.hpp"
#include "blitz/topology.hpp"
#include "blocking/pool.hpp"
#include "io/io_driver.hpp"
#include "sched/park.hpp"
#include "sched/scheduler.hpp"
#include "task/context_internal.hpp"
#include "time/timer_driver.hpp"
#include "topo/plan.hpp"

namespace blitz::detail {

// The drivers a parked worker waits in, stacked behind sched/'s park interface: the timer
// driver and the I/O driver. maintain() fires due timers and, when descriptors are registered,
// looks at the I/O driver without blocking (B1); park() sleeps no longer than the next timer
// expiry (I5): in the I/O driver if no other worker is (exactly one sleeps there, O2), else on
// the worker's futex.
//
// Timer coverage (T7): while a timer is armed and some worker is parked, at least one parked
// worker plans to wake by the timer's expiry, so a timer never waits for a running worker's
// tick. Each parked worker publishes its planned wake-up; three events can leave the earliest
// expiry uncovered, and each checks for it and then wakes one parked worker (a claim through
// the scheduler, I2/I3), which re-plans and parks again:
//   - an arm that makes the earliest expiry earlier (timer_driver's listener);
//   - a parked worker leaving its park (it may have been the only one covering);
//   - a worker firing timers (the next expiry is new).
// Protocol (store-load on both sides, hence seq_cst): a parking worker stores its plan, then
// re-reads the expiry and re-plans if it moved; an arm stores the expiry, then reads the plans.
//
// Driver hand-off (O4): a worker that leaves the I/O driver, or polls it at a tick start,
// with workers asleep on their futexes and none in the driver, wakes one of them (a claim),
// which then parks in the driver: I/O never waits behind a worker stuck in a long poll. The
// check runs in maintain(), which a worker calls at the start of every tick, right after a
// park and before it runs anything.
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
    park_wake park(unsigned index, parker& p, std::chrono::nanoseconds max) noexcept override;
    void unpark(parker& p) noexcept override;
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
    park_wake park_in_driver(parker& p, std::chrono::nanoseconds sleep) noexcept;
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

// Construction, in member order: the validated config; the placement plan (topology, PU and
// node per worker); the timer driver; the blocking pool; the I/O driver (its backend chosen by
// config::io_backend, O1); the driver stack; the context the worker threads carry; the scheduler,
// which starts the workers, each of which binds itself through on_worker_start. Then it waits for
// the bindings (placed runtimes) and throws topology_error for one that failed unless
// topology.best_effort.
//
// Shutdown: the blocking pool first (its queued jobs are cancelled, running ones finish and wake
// their tasks while the workers still run), then the scheduler (stop, join, cancel, drain:
// sockets in task frames deregister), then the I/O driver's shutdown (a socket that outlives
// the runtime sees io_shutdown and its waits end). Members are destroyed in reverse: the
// scheduler before the drivers its workers used; the I/O driver lives on while a socket holds
// it.
// Thread-safety: as blitz::runtime.
class runtime_core {
public:
    explicit runtime_core(const config& cfg);  // cfg must be validated
    ~runtime_core();
    runtime_core(const runtime_core&) = delete;
    runtime_core& operator=(const runtime_core&) = delete;

    void shutdown();
    runtime_metrics metrics() const;
    const config& cfg() const noexcept { return cfg_; }
    const placement_report& placement() const noexcept { return plan_.report; }
    scheduler& sched() noexcept { return sched_; }
    timer_driver& timers() noexcept { return timers_; }
    blocking_pool& blocking() noexcept { return blocking_; }
    io_driver* io() noexcept { return io_.get(); }
    const std::string& io_reason() const noexcept { return io_reason_; }

private:
    scheduler_setup make_setup();
    // Worker `index`'s thread, first thing: binds it to its PU and records what the kernel
    // reports from inside the thread (N1).
    void bind_worker(unsigned index) noexcept;
    // Waits for every worker's binding; throws topology_error for a failed one unless best effort.
    void await_binding();

    const config cfg_;
    topo::plan plan_;  // its report is completed by the workers (bind_worker) and await_binding
    timer_driver timers_;
    blocking_pool blocking_;
    std::string io_reason_;          // why this I/O backend (before io_, which fills it)
    std::shared_ptr<io_driver> io_;  // null with io_backend = none; sockets share it
    driver_stack drivers_;
    runtime_context ctx_;
    std::unique_ptr<std::latch> start_latch_;  // placed runtimes: counts workers through start
    scheduler sched_;                          // last: its workers use everything above
};

}  // namespace blitz::detail
