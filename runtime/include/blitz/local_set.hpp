// SPDX-License-Identifier: MIT
#pragma once
// blitz::local_set: a set of tasks that all run on the thread that made it (Tokio's LocalSet).

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <stdexcept>
#include <utility>

#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/join_set.hpp"
#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace blitz {

// A join_set whose tasks are pinned to the worker that made the set (blitz::spawn_local), so
// they never run anywhere else and may share thread-affine state without locks. On the
// current-thread runtime (config::flavor current_thread) that worker is the thread driving
// block_on, as with Tokio's LocalSet inside a current_thread runtime.
//
// 1. Make the set inside a task (its worker becomes the set's home); std::logic_error on any
//    other thread.
// 2. spawn_local(t) pins t to the home and returns its id, whichever thread calls it (the task
//    that owns the set may have moved to another worker since it made the set).
// 3. co_await run_until(f) runs f pinned to the home too and returns its value (or rethrows its
//    exception); the set's tasks keep running beside it, and stay in the set afterwards.
// 4. join_next, try_join_next, join_all, abort_all, shutdown, detach_all, size and empty as in
//    join_set; destroying the set aborts its tasks.
//
// Invariants: P1 for every task of the set (polled on the home only), X8 for their outcomes.
// Thread-safety: the set is used by one task or thread at a time, like a join_set.
template <class T = void>
class local_set {
public:
    local_set() : home_(this_worker_index()) {
        if (home_ < 0) {
            throw std::logic_error(
                "blitz::local_set: made outside a runtime worker; make it inside a task");
        }
        sched_ = detail::pinned_target_here();
    }
    local_set(local_set&&) noexcept = default;
    local_set& operator=(local_set&&) noexcept = default;

    // The worker whose thread runs every task of the set.
    unsigned home() const noexcept { return static_cast<unsigned>(home_); }

    std::uint64_t spawn_local(task<T> t,
                              std::source_location site = std::source_location::current()) {
        return set_.spawn_on(sched_, std::move(t), site);
    }

    // Runs f on the home beside the set's tasks, until it finishes (Tokio's run_until).
    template <class U>
    task<U> run_until(task<U> f, std::source_location site = std::source_location::current()) {
        return run_on(sched_, std::move(f), site);  // the home by value: the set may move
    }

    auto join_next() { return set_.join_next(); }
    auto try_join_next() { return set_.try_join_next(); }
    auto join_all() { return set_.join_all(); }
    task<void> shutdown() { return set_.shutdown(); }
    void abort_all() noexcept { set_.abort_all(); }
    void detach_all() noexcept { set_.detach_all(); }
    std::size_t size() const { return set_.size(); }
    bool empty() const { return set_.empty(); }

private:
    template <class U>
    static task<U> run_on(detail::task_scheduler* home, task<U> f, std::source_location site) {
        co_return co_await detail::spawn_on(home, std::move(f), site);
    }

    int home_;
    detail::task_scheduler* sched_ = nullptr;  // the home's pinned tasks' (pinned_home)
    join_set<T> set_;
};

}  // namespace blitz
