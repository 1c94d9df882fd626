// SPDX-License-Identifier: MIT
#pragma once
// blocking_pool: threads for spawn_blocking, created on demand and retired when idle (X1).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "blitz/blocking.hpp"

namespace blitz::detail {

// 1. submit(): queues the job; an idle thread takes it, or a new thread starts if fewer than
//    `max_threads` exist; otherwise it waits in the queue (FIFO) for a thread to free up.
// 2. A thread with nothing to do for `keep_alive` exits.
// 3. shutdown(): jobs still queued are cancelled (their handles report task_cancelled), jobs
//    running finish, and every thread has exited when it returns. Later submits are cancelled.
//
// Invariants: threads <= max_threads; every submitted job is run or cancelled exactly once.
// Thread-safety: all members from any thread.
class blocking_pool {
public:
    struct options {
        std::size_t max_threads = 512;
        std::chrono::nanoseconds keep_alive = std::chrono::seconds(10);
        std::string thread_name = "blitz-blocking";
        // When not empty, each pool thread sets its CPU set to this first (threads started from
        // a pinned worker would otherwise inherit its single PU).
        std::vector<unsigned> cpus;
        bool fault_ignore_cap = false;  // X1's negative control
        bool fault_one_idle_for_all =
            false;  // X1's burst control: any idle thread covers the queue
        // Tests only (X1's burst): a woken idle thread waits this long, still counted idle and
        // without the lock, before it takes a job, so a burst is queued before it does.
        std::chrono::nanoseconds test_wake_delay{0};
    };
    explicit blocking_pool(options o);
    ~blocking_pool();
    blocking_pool(const blocking_pool&) = delete;
    blocking_pool& operator=(const blocking_pool&) = delete;

    void submit(std::shared_ptr<blocking_job> job);
    void shutdown();

    struct stats {
        std::size_t threads = 0, idle = 0, queued = 0, peak_threads = 0, spawned_threads = 0;
    };
    stats snapshot() const;

private:
    void thread_main();

    const options opt_;
    mutable std::mutex mu_;
    std::condition_variable work_cv_;  // idle threads wait here
    std::condition_variable exit_cv_;  // shutdown waits here for threads to exit
    std::deque<std::shared_ptr<blocking_job>> queue_;
    std::size_t threads_ = 0, idle_ = 0, peak_ = 0, spawned_ = 0;
    bool shutdown_ = false;
};

}  // namespace blitz::detail
