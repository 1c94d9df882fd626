// SPDX-License-Identifier: MIT
#pragma once
// Real blitz tasks inside a model (issue 19): a scheduler whose queue is a model mutex and list,
// and a worker thread that polls what it pops, so the awaitables of the sync primitives and
// channels run their own code under the explorer. Only the worker thread polls tasks, so the
// runtime's thread-locals (the current task, the cooperative budget) are used by one fiber
// only; the other model threads play plain threads (senders, aborters, joiners).

#include <deque>
#include <optional>
#include <vector>

#include "blitz/detail/spawn.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/task.hpp"
#include "model.hpp"
#include "task/schedule.hpp"

namespace blitz::model {

class task_harness final : public detail::task_scheduler {
public:
    task_harness() = default;
    task_harness(const task_harness&) = delete;
    task_harness& operator=(const task_harness&) = delete;
    ~task_harness() {
        // The owner's list reference of every spawned task, as a runtime's shutdown pass drops it.
        for (detail::task_header* t : spawned_) t->unref();
    }

    template <class T>
    join_handle<T> spawn(task<T> t) {
        return detail::spawn_on(this, std::move(t));
    }

    // The worker: polls queued tasks until stop() and an empty queue. Run it in a model thread.
    void run_worker() {
        for (;;) {
            detail::task_header* t = nullptr;
            {
                mu_.lock();
                if (!queue_.empty()) {
                    t = queue_.front();
                    queue_.pop_front();
                }
                mu_.unlock();
            }
            if (t) {
                bool stray = false;
                const auto r = t->poll(128, ignore_shield, stray);
                if (r == detail::task_header::poll_outcome::rescheduled) push(t);
                continue;
            }
            if (stop_.load(std::memory_order_acquire)) return;
            yield();  // nothing to run: let the other threads go on
        }
    }
    void stop() { stop_.store(true, std::memory_order_release); }
    // K4's negative control: the worker's polls cancel a task whose shield is up.
    bool ignore_shield = false;

    void spawn(detail::task_header* t) noexcept override {
        spawned_.push_back(t);
        push(t);
    }
    void schedule(detail::task_header* t, bool) noexcept override { push(t); }
    // The harness keeps every task in spawned_ instead of a list.
    void list(detail::task_header*) noexcept override {}
    released release(detail::task_header*) noexcept override { return released::unlisted; }
    // No task_list here (reg_owner_ stays 0), so complete() never hands a task back.
    void hand_back(detail::task_header*) noexcept override {}
    void unhandled_exception(detail::task_header*) noexcept override {}

private:
    void push(detail::task_header* t) {
        mu_.lock();
        queue_.push_back(t);
        mu_.unlock();
    }

    mutex mu_;
    std::deque<detail::task_header*> queue_;  // under mu_
    atomic<bool> stop_{false};
    std::vector<detail::task_header*> spawned_;  // the spawning thread's only
};

// Joins a task of the harness: its value, or nullopt when it was cancelled (aborted).
template <class T>
std::optional<T> join_unless_cancelled(join_handle<T>& jh) {
    try {
        return jh.join();
    } catch (const task_cancelled&) {
        return std::nullopt;
    }
}

}  // namespace blitz::model
