// SPDX-License-Identifier: MIT
#pragma once
// scheduler: the multi-threaded work-stealing scheduler behind blitz::runtime.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/config.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/metrics.hpp"
#include "sched/global_queue.hpp"
#include "sched/idle_state.hpp"
#include "sched/park.hpp"
#include "sched/task_list.hpp"
#include "sched/victim_tiers.hpp"
#include "sched/worker.hpp"
#include "task/schedule.hpp"

namespace blitz::detail {

struct runtime_context;

// What the composition root (rt/) gives a scheduler besides the config: the worker count, the
// driver the workers park in, the context to install on their threads, and the placement hooks.
struct scheduler_setup {
    unsigned workers = 1;
    park_driver* driver = nullptr;             // required; outlives the scheduler
    const runtime_context* context = nullptr;  // opaque here: installed on each worker thread
    // Called first thing on worker i's thread (binding it to its PU, N1). Must not throw.
    std::function<void(unsigned)> on_worker_start;
    // A current-thread runtime on a paused clock (issue 47): called when its driver has nothing
    // to run, before it parks; moves the clock to the next timer and fires it (Tokio's
    // auto-advance), or returns false (no timer armed, or blocking work still running). Empty:
    // never.
    std::function<bool()> auto_advance;
    // Memory for worker i's state (N3: on its node), or nullptr for the default allocation;
    // `release_worker_memory` gives it back. Both empty: default allocation for everyone.
    std::function<void*(unsigned, std::size_t)> worker_memory;
    std::function<void(void*, std::size_t)> release_worker_memory;
    // Per worker, when placed: its victims in tiers (N4; empty: a uniform random walk) and its
    // distance class (0 node, 1 package, 2 remote) to every worker (steal counters).
    std::vector<victim_tiers> tiers;
    std::vector<std::vector<std::uint8_t>> distances;
};

// A moment's view of one live scheduler, for diagnostics (the conformance harness's hang
// report): per worker whether it is parked, and its poll and tick counts.
struct scheduler_snapshot {
    struct worker_view {
        bool parked = false;
        std::uint64_t polls = 0, ticks = 0;
    };
    std::vector<worker_view> workers;
    std::uint64_t global_len = 0;
    unsigned searching = 0;
};
// Every scheduler alive in this process, in construction order. Cold: takes a lock.
std::vector<scheduler_snapshot> snapshot_live_schedulers();

// Owns the workers, the global queue and the idle state (each worker lists the tasks that a poll
// of its left suspended). It is the task_scheduler of every task spawned on it.
//
// Protocol for a task (see task_header for the state word):
//   1. spawn(): schedules the task (LIFO slot on one of our workers, global queue otherwise).
//      No list and no lock: a task is listed only when a poll leaves it suspended (list(), by
//      the polling worker, before IDLE is published), so one that completes in its first poll
//      never touches a list (issue 45, lazy listing).
//   2. schedule(): called by whoever created a queue entry (wake, reschedule, abort) to place it;
//      a push that makes work visible to others calls notify_parked() (I3).
//   3. task_header::complete() is the single exit for a task; release() takes a task that
//      completed on the worker that listed it out of that worker's list, or finds it never
//      listed (either way the list's reference is the completer's).
//   4. shutdown(): stops and joins the workers, cancels every listed task that has not
//      completed, then drains every queue (cancelling there the tasks never listed), until
//      nothing is left (K3).
//
// Invariants: every spawned task is completed exactly once; after shutdown() returns no task of
// this scheduler is queued or listed.
// Thread-safety: spawn, schedule and metrics from any thread; shutdown once, not from a worker.
class scheduler;

// pinned_home: the task_scheduler of the tasks pinned to one worker (blitz::spawn_local,
// runtime::spawn_pinned; INVARIANTS P1). A pinned task's header points here instead of at the
// scheduler, so a wake, a cancellation or a spawn reaches its home worker's pinned queues
// (worker::push_pinned_here from the home's thread, push_pinned_remote from any other) and
// never a ring, a LIFO slot or the global queue; every other call goes to the scheduler as it
// is. Other tasks pay nothing for it: their wakes go through the scheduler's vtable as before.
// Thread-safety: every member from any thread, as task_scheduler's.
class pinned_home final : public task_scheduler {
public:
    pinned_home(scheduler& s, unsigned home) noexcept
        : task_scheduler(/*unlisted_are_mine=*/true), s_(s), home_(home) {}
    void spawn(task_header* t) noexcept override;
    void list(task_header* t) noexcept override;
    void schedule(task_header* t, bool is_yield) noexcept override;
    released release(task_header* t) noexcept override;
    void hand_back(task_header* t) noexcept override;
    void unhandled_exception(task_header* t) noexcept override;
    bool run_until_complete(task_header* t) noexcept override;
    unsigned home() const noexcept { return home_; }

private:
    scheduler& s_;
    const unsigned home_;
};

class scheduler final : public task_scheduler {
public:
    // cfg must be validated; starts the workers (each calls setup.on_worker_start first).
    scheduler(const config& cfg, scheduler_setup setup);
    ~scheduler();
    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    // ---- task_scheduler ----
    void spawn(task_header* t) noexcept override;
    // spawn's body, inline in scheduler.cpp: compiled into spawn and submit_spawn.
    inline void spawn_here(task_header* t) noexcept;
    void schedule(task_header* t, bool is_yield) noexcept override;
    void list(task_header* t) noexcept override;
    released release(task_header* t) noexcept override;
    void hand_back(task_header* t) noexcept override;
    void unhandled_exception(task_header* t) noexcept override;
    // The current-thread runtime (config::flavor): drives worker 0 on the calling thread until
    // `t` completes, or waits for `t` while another thread drives; false on a multi-threaded
    // scheduler. See "The current-thread core" below.
    bool run_until_complete(task_header* t) noexcept override;
    bool current_thread() const noexcept { return cfg_.flavor == runtime_flavor::current_thread; }
    // The setup's auto_advance, or false without one.
    bool auto_advance() { return setup_.auto_advance && setup_.auto_advance(); }

    // Wakes one parked worker unless a searcher exists (I3); true if it claimed one.
    // `pushed_by_rmw`: see idle_state::should_notify (true after a global queue push).
    bool notify_parked(bool pushed_by_rmw = false) noexcept;
    // After a worker pushed to its own queues: that worker is awake and runs the task if nobody
    // steals it, so waking a parked one only adds parallelism. It is skipped when a racy read
    // finds nobody parked, or a searcher (who would make notify_parked() wake nobody, I3), which
    // keeps the StoreLoad barrier of notify_parked()'s seq_cst read of the searcher count off
    // the yield and spawn paths of a busy runtime; a miss costs parallelism, never progress.
    // (The barrier, an mfence here, was 7.5% of spawn_many_local's samples at 4 workers;
    // skipping it while a searcher exists took that row from 1.93 to 1.38 ms in alternated runs.)
    void notify_parked_for_local() noexcept {
        if (idle_.parked_hint() != 0 && !idle_.searcher_hint()) notify_parked();
    }
    // True if any ring or the global queue holds a task (the last searcher's final check).
    bool work_pending() const noexcept;
    // The calling thread's worker if it is one of this scheduler's, else nullptr.
    worker* own_worker() const noexcept {
        worker* w = current_worker();
        return w && w->owned_by(this) ? w : nullptr;
    }
    // Stops and joins the workers, then cancels and drains every task (K3). Not from a worker.
    void shutdown();

    runtime_metrics metrics() const;
    // The task dump (runtime::dump; dump_request's protocol): every worker lists its tasks;
    // waits up to `wait` for workers to start answering. Any thread, also a worker's.
    runtime_dump dump(std::chrono::nanoseconds wait);
    scheduler_snapshot snapshot() const;
    probe_streams take_probes();
    // Nanoseconds since the scheduler started (probe timestamps).
    std::uint64_t uptime_ns() const noexcept {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - started_)
                                              .count());
    }
    const config& cfg() const noexcept { return cfg_; }
    // Worker threads call these first and last thing.
    void on_worker_start(unsigned index) noexcept;
    void on_worker_stop() noexcept;
    unsigned num_workers() const noexcept { return nworkers_; }
    global_queue& global() noexcept { return global_; }
    park_driver& driver() noexcept { return *driver_; }
    idle_state& idle() noexcept { return idle_; }
    // The stall detector, or nullptr (off). Set before the workers start, never changed.
    stall_watchdog* watchdog() const noexcept { return watchdog_.get(); }
    worker& worker_at(unsigned i) noexcept { return *workers_[i]; }
    // The task_scheduler of the tasks pinned to worker i (i < num_workers()).
    pinned_home& pinned_home_of(unsigned i) noexcept { return *homes_[i]; }
    // A pinned task's spawn (pinned_home::spawn), and a queue entry for one (its schedule).
    void spawn_pinned(task_header* t, unsigned home) noexcept;
    void place_pinned(task_header* t, unsigned home) noexcept;
    bool shutting_down() const noexcept {
        return shutdown_.load(std::memory_order_acquire);  // acquire: pairs with shutdown()
    }

private:
    void cancel_all_and_drain() noexcept;
    // schedule() for a caller that already knows its own worker (`w`, or nullptr).
    void schedule_from(worker* w, task_header* t, bool is_yield) noexcept;
    void make_workers();

    // Frees a worker the way it was allocated: through the setup's release hook or with delete.
    struct worker_free {
        const std::function<void(void*, std::size_t)>* release = nullptr;
        void operator()(worker* w) const noexcept;
    };

    const config cfg_;
    scheduler_setup setup_;
    const unsigned nworkers_;
    // The workers' task lists take ids first_list_id_ + index (task_list::reserve_ids), so a
    // task's list id names the worker that gets it back when it completes elsewhere.
    const std::uint16_t first_list_id_;
    std::uint16_t list_id(unsigned i) const noexcept {
        return static_cast<std::uint16_t>(first_list_id_ + i);
    }
    park_driver* const driver_;
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    global_queue global_;
    idle_state idle_;
    // Raised by every spawn from outside the workers: on a line of its own, away from what the
    // workers read all the time (the workers, the shutdown flag), which shared its line before.
    alignas(cache_line) atomic<std::uint64_t> foreign_spawned_{0};
    alignas(cache_line) std::vector<std::unique_ptr<worker, worker_free>> workers_;
    std::vector<std::unique_ptr<pinned_home>> homes_;  // one per worker, made with them
    atomic<bool> shutdown_{false};
    std::vector<std::thread> threads_;
    bool joined_ = false;
    std::unique_ptr<stall_watchdog> watchdog_;  // config::stall_threshold > 0
    std::mutex dump_mu_;                        // dump(): one at a time

    // The current-thread core: worker 0 of a current-thread scheduler has no thread; whoever
    // holds the core runs it (worker::drive).
    //   1. run_until_complete(t) sets t's join waker to wake_core (once per call), then waits
    //      under core_mu_ until t completed or the core is free; it takes the core
    //      (core_taken_), drives worker 0 until t completes, and gives the core back,
    //      notifying the waiters.
    //   2. wake_core (t completed): notifies the waiters, each of which rechecks its own task;
    //      from a thread other than the driver it also unparks worker 0, whose drive rechecks
    //      its root after every park (a token left by an unpark that came early makes the next
    //      park return at once).
    //   3. shutdown() unparks the driver, waits for the core, and keeps it: no drive starts
    //      after it; the drain that follows completes every waiter's task.
    // Invariants: at most one thread drives worker 0; core_taken_ is true while one does, and
    // from shutdown on. Thread-safety: core_mu_ guards core_taken_ and core_waiters_.
    std::mutex core_mu_;
    std::condition_variable core_cv_;
    bool core_taken_ = false;
    unsigned core_waiters_ = 0;
    static void wake_core(void* self);
    // dump() on a current-thread runtime: answers for worker 0 on this thread when nobody
    // drives it (holding the core meanwhile).
    void answer_dump_undriven();
    // Under core_mu_: the core is free again; its waiters are told.
    void give_core_back();
    static void* keep_core_waker(void* self) { return self; }
    static void drop_core_waker(void*) {}
    static const waker_vtable core_waker_vtable;
};

}  // namespace blitz::detail
