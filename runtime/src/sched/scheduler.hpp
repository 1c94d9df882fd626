// SPDX-License-Identifier: MIT
#pragma once
// scheduler: the multi-threaded work-stealing scheduler behind blitz::runtime.

#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "blitz/config.hpp"
#include "blitz/metrics.hpp"
#include "blocking/pool.hpp"
#include "base/atomic.hpp"
#include "sched/global_queue.hpp"
#include "sched/idle_state.hpp"
#include "sched/task_list.hpp"
#include "sched/worker.hpp"
#include "time/timer_driver.hpp"
#include "topo/plan.hpp"

namespace blitz::detail {

// Owns the workers, the global queue, the idle state and the list of tasks spawned from
// threads that are not its workers (each worker lists the tasks spawned on it).
//
// Protocol for a task (see task_header for the state word):
//   1. spawn(): records the task in the spawning worker's list (or, from another thread, in
//      foreign_tasks_ under a mutex) and schedules it (LIFO slot on one of our workers, global
//      queue otherwise). No lock on a worker.
//   2. schedule(): called by whoever created a queue entry (wake, reschedule, abort) to place it;
//      a push that makes work visible to others calls notify_parked() (I3).
//   3. complete_task(): the single exit for a task, by completion or cancellation.
//   4. shutdown(): stops and joins the workers, cancels every listed task that has not
//      completed, then drains every queue, until nothing is left (K3).
//
// Invariants: every spawned task is completed exactly once; after shutdown() returns no task of
// this scheduler is queued or listed.
// Thread-safety: spawn, schedule and metrics from any thread; shutdown once, not from a worker.
class scheduler {
public:
    explicit scheduler(const config& cfg);  // cfg must be validated; starts the workers
    ~scheduler();
    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    void spawn(task_header* t) noexcept;
    void schedule(task_header* t, bool is_yield) noexcept;
    void notify_parked() noexcept;
    // After a worker pushed to its own queues: that worker is awake and runs the task if nobody
    // steals it, so waking a parked one only adds parallelism. It is skipped when a racy read
    // finds nobody parked, which keeps the contended seq_cst RMW of notify_parked() (I3) off the
    // yield and spawn paths of a saturated runtime; a miss costs parallelism, never progress.
    void notify_parked_for_local() noexcept {
        if (idle_.parked_hint() != 0) notify_parked();
    }
    // True if any ring or the global queue holds a task (the last searcher's final check).
    bool work_pending() const noexcept;
    void complete_task(task_header* t, bool cancelled, std::uint32_t refs_to_drop) noexcept;
    // An exception ended a task whose handle is gone: config::on_unhandled_exception.
    void report_unhandled(task_header* t) noexcept;
    void shutdown();

    runtime_metrics metrics() const;
    probe_streams take_probes();
    // Nanoseconds since the scheduler started (probe timestamps).
    std::uint64_t uptime_ns() const noexcept {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - started_)
                                              .count());
    }
    const config& cfg() const noexcept { return cfg_; }
    // Where each worker runs and what it saw there (complete once the constructor returns).
    const placement_report& placement() const noexcept { return plan_.report; }
    // Called by each worker thread first thing: binds it to its PU (if placed), records what
    // sched_getaffinity reports from inside the thread, and signals the constructor.
    void on_worker_start(unsigned index) noexcept;
    unsigned num_workers() const noexcept { return nworkers_; }
    global_queue& global() noexcept { return global_; }
    timer_driver& timers() noexcept { return timers_; }
    blocking_pool& blocking() noexcept { return blocking_; }
    idle_state& idle() noexcept { return idle_; }
    worker& worker_at(unsigned i) noexcept { return *workers_[i]; }
    bool shutting_down() const noexcept {
        return shutdown_.load(std::memory_order_acquire);  // acquire: pairs with shutdown()
    }

private:
    void cancel_all_and_drain() noexcept;
    void make_workers();
    // Waits for every worker's on_worker_start; throws topology_error for a failed binding
    // unless best effort (after stopping the workers).
    void await_binding();

    // Frees a worker the way it was allocated: node-local (libnuma) or with delete.
    struct worker_free {
        bool node_local = false;
        void operator()(worker* w) const noexcept;
    };

    const config cfg_;
    topo::plan plan_;  // before nworkers_: the plan decides the worker count
    const unsigned nworkers_;
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    timer_driver timers_;  // declared before the workers: they use it until joined
    blocking_pool blocking_;
    global_queue global_;
    idle_state idle_;
    std::mutex foreign_mu_;
    task_list foreign_tasks_;  // guarded by foreign_mu_
    atomic<std::uint64_t> foreign_spawned_{0};
    std::vector<std::unique_ptr<worker, worker_free>> workers_;
    std::unique_ptr<std::latch> start_latch_;  // placed runtimes: counts workers through start
    std::vector<std::thread> threads_;
    atomic<bool> shutdown_{false};
    bool joined_ = false;
};

}  // namespace blitz::detail
