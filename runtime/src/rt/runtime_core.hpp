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
#include "rt/driver_stack.hpp"
#include "rt/inspect_server.hpp"
#include "sched/scheduler.hpp"
#include "task/context_internal.hpp"
#include "time/timer_driver.hpp"
#include "topo/plan.hpp"

namespace blitz::detail {

// Construction, in member order: the validated config; the placement plan (topology, PU and
// node per worker); the timer driver; the blocking pool; the I/O driver (its backend chosen by
// config::io_backend, O1); the driver stack; the context the worker threads carry; the scheduler,
// which starts the workers, each of which binds itself through on_worker_start. Then it waits for
// the bindings (placed runtimes) and throws topology_error for one that failed unless
// topology.best_effort. Last, the inspect server (config::inspect_socket or dump_signal).
//
// Shutdown: the inspect server first (nothing asks for metrics or dumps after), the blocking
// pool next (its queued jobs are cancelled, running ones finish and wake
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

public:
    // runtime::find_lost: two dumps in a row and the analysis (blitz::find_lost).
    lost_report find_lost(std::chrono::nanoseconds wait);

private:
    // One inspect socket request (inspect_server's protocol).
    std::string answer_inspect(const std::string& request);

    const config cfg_;
    topo::plan plan_;  // its report is completed by the workers (bind_worker) and await_binding
    timer_driver timers_;
    blocking_pool blocking_;
    std::string io_reason_;          // why this I/O backend (before io_, which fills it)
    std::shared_ptr<io_driver> io_;  // null with io_backend = none; sockets share it
    driver_stack drivers_;
    runtime_context ctx_;
    std::unique_ptr<std::latch> start_latch_;  // placed runtimes: counts workers through start
    scheduler sched_;                          // its workers use everything above
    // config::inspect_socket / dump_signal: made once the workers run, stopped first.
    std::unique_ptr<inspect_server> inspect_;
};

}  // namespace blitz::detail
