// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::runtime: the multi-threaded work-stealing runtime, and blitz::spawn.

#include <chrono>
#include <memory>
#include <stdexcept>

#include "blitz/config.hpp"
#include "blitz/detail/select_branch.hpp"
#include "blitz/detail/spawn.hpp"
#include "blitz/dump.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/metrics.hpp"
#include "blitz/probe.hpp"
#include "blitz/task.hpp"
#include "blitz/topology.hpp"

namespace blitz {

class task_tracker;
class cancellation_token;

// The blocking pool's types, declared only: runtime::spawn_blocking is instantiated where it is
// called, and needs blitz/blocking.hpp there (blitz/blitz.hpp includes it).
template <class T>
class blocking_handle;

namespace detail {
class blocking_pool;
class blocking_job;
template <class T, class F>
class blocking_job_of;
void submit_blocking(blocking_pool* p, std::shared_ptr<blocking_job> job);
class runtime_core;

// Awaits `a` inside a task made for it (for block_on); R is what co_await of an A gives, as a
// select branch over it would see it.
// A select or timeout (awaited_in_place) is awaited through its awaiter: block_on's caller keeps
// it, and the awaitables it borrows, alive for the whole wait.
template <class A>
decltype(auto) awaiter_for_block_on(A& a) {
    if constexpr (awaited_in_place<A>) {
        return static_cast<A&&>(a).operator co_await();
    } else {
        return static_cast<A&&>(a);
    }
}
template <class A, class R = branch_raw_result<A>>
task<R> await_in_task(A& a) {
    if constexpr (std::is_void_v<R>) {
        co_await awaiter_for_block_on(a);
    } else {
        co_return co_await awaiter_for_block_on(a);
    }
}
}  // namespace detail

// The runtime: `workers` threads running spawned tasks (see config for every knob).
//
// 1. Construction validates the config (config_error names the bad field), loads the topology
//    and places the workers if a placement policy is set (topology_error names the bad input or
//    the worker that could not bind), and starts the workers.
// 2. spawn() from any thread; blitz::spawn() from inside a task; block_on() runs a task from a
//    plain thread and waits for its result.
// 3. Destruction (or shutdown()) stops the workers, cancels every task that has not completed
//    and destroys each exactly once, wherever it was (K3). Join handles that outlive the
//    runtime report those tasks as cancelled.
//
// Thread-safety: every member from any thread, except that shutdown()/destruction must not run
// inside one of this runtime's own tasks.
class runtime {
public:
    explicit runtime(const config& cfg = {});
    ~runtime();
    runtime(const runtime&) = delete;
    runtime& operator=(const runtime&) = delete;

    template <class T>
    join_handle<T> spawn(task<T> t, std::source_location site = std::source_location::current()) {
        return detail::spawn_on(sched_, std::move(t), site);
    }
    // Spawns `t` pinned to worker `worker` (0 <= worker < num_workers()), from any thread: it is
    // polled on that worker's thread only, never stolen and never moved by the global queue
    // (INVARIANTS P1), so thread-affine state in its frame is safe. Throws std::out_of_range
    // for a worker the runtime does not have. See blitz::spawn_local.
    template <class T>
    join_handle<T> spawn_pinned(unsigned worker, task<T> t,
                                std::source_location site = std::source_location::current()) {
        return detail::spawn_on(pinned_scheduler(worker), std::move(t), site);
    }

    // Runs f() on the blocking pool (X1); see blitz::spawn_blocking. Include blitz/blocking.hpp
    // (or blitz/blitz.hpp) to call it.
    template <class F>
    auto spawn_blocking(F f) -> blocking_handle<std::invoke_result_t<F&>> {
        using T = std::invoke_result_t<F&>;
        auto job = std::make_shared<detail::blocking_job_of<T, F>>(std::move(f));
        detail::submit_blocking(pool_, job);
        return blocking_handle<T>(std::move(job));
    }

    // Runs `t` on the workers and blocks the calling plain thread until it finishes; returns its
    // value or rethrows its exception. Throws std::logic_error when called from a worker.
    template <class T>
    T block_on(task<T> t, std::source_location site = std::source_location::current()) {
        return spawn(std::move(t), site).join();
    }
    // The same for any other awaitable (a select, a timeout, a channel recv): awaited inside a
    // task made for it. The awaitable lives in the caller's expression, which outlasts the wait.
    template <class A>
        requires(!detail::is_blitz_task<std::remove_cvref_t<A>>::value)
    auto block_on(A&& a) {
        return block_on(detail::await_in_task(a));
    }

    // Paused-time mode (config::start_paused): moves the clock forward by `d` and fires every
    // timer due by then before returning. Throws std::logic_error on a real-time runtime.
    void advance(std::chrono::nanoseconds d);
    // The runtime's clock: steady_clock, or the virtual clock in paused-time mode.
    std::chrono::steady_clock::time_point now() const noexcept;

    runtime_metrics metrics() const;
    // Every live task (issue 46; blitz/dump.hpp, docs/guide/debugging.md): each worker lists
    // the tasks its polls left suspended, between two polls, with each waiting task's await
    // chain read while nothing can poll it. Workers that do not reach a point between polls
    // within `wait` (stalled) are named in workers_not_answering and their tasks are missing.
    // Any thread, also one of this runtime's tasks (that worker answers at once); costs each
    // worker the time to list its tasks (about a microsecond a task). Empty after shutdown.
    runtime_dump dump(std::chrono::milliseconds wait = std::chrono::seconds(1)) const;
    // Tasks that can never be woken (issue 46; blitz::find_lost on two dumps taken in a row):
    // only what is proven, with the proof. Deadlocks (cycles of joins, of channels whose
    // senders sit in each other's frames, of mutex guards) are marked.
    lost_report find_lost(std::chrono::milliseconds wait = std::chrono::seconds(1)) const;
    // Probe events recorded since the last call (config::probes); empty streams when off.
    probe_streams take_probes();
    unsigned num_workers() const noexcept;
    // Where each worker runs: its PU, core, node and package, whether it bound itself, the CPU
    // set it saw from inside, and where its state was allocated (config::topology).
    const placement_report& placement() const noexcept;
    const config& cfg() const noexcept;
    void shutdown();
    // A graceful stop, from a plain thread (issue 17): cancels `stop` (if given), closes
    // `tracked` (if given) and waits up to `d` for its tasks to finish, then shuts down as
    // shutdown() does (every remaining task aborted, every I/O operation drained). True when
    // the tracked tasks finished in time (task_tracker: blitz/task_scope.hpp).
    bool shutdown_timeout(std::chrono::nanoseconds d, task_tracker* tracked = nullptr,
                          const cancellation_token* stop = nullptr);

private:
    detail::task_scheduler* pinned_scheduler(unsigned worker) const;
    std::unique_ptr<detail::runtime_core> core_;  // rt/runtime_core.hpp: owns every part
    detail::task_scheduler* sched_ = nullptr;     // core_'s, for the inline spawn path
    detail::blocking_pool* pool_ = nullptr;       // core_'s, for spawn_blocking
};

// Spawns onto the runtime running the calling task (L1: it lands in this worker's LIFO slot).
// Throws std::logic_error outside a runtime worker; use runtime::spawn there.
template <class T>
join_handle<T> spawn(task<T> t, std::source_location site = std::source_location::current()) {
    return detail::spawn_on(detail::spawn_target(), std::move(t), site);
}

namespace detail {
// The calling worker's pinned tasks' scheduler; during a runtime's shutdown drain, its
// scheduler (the spawn is cancelled at once); throws std::logic_error anywhere else.
task_scheduler* pinned_target_here();
}  // namespace detail

// Spawns `t` pinned to the worker running the calling task (Tokio's spawn_local): it is polled
// on this thread only, never stolen and never moved by the global queue (INVARIANTS P1), so
// thread-affine state (a thread-local, a non-thread-safe object shared by this thread's pinned
// tasks) is safe across its awaits. On the current-thread runtime every task already runs on
// the driving thread. Pinned tasks are fair with the worker's other tasks but cannot be
// balanced: a worker whose pinned tasks are busy keeps them. Throws std::logic_error outside a
// runtime worker (a plain thread, a blocking-pool thread); use runtime::spawn_pinned there.
template <class T>
join_handle<T> spawn_local(task<T> t, std::source_location site = std::source_location::current()) {
    return detail::spawn_on(detail::pinned_target_here(), std::move(t), site);
}

// The index of the worker running the calling task (0 <= index < runtime::num_workers()), or
// -1 on any other thread. A task that is not pinned may see a different index after each
// await; a pinned one always sees its home's.
int this_worker_index() noexcept;

}  // namespace blitz
