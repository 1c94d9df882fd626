// SPDX-License-Identifier: MIT
#include "blocking/pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "base/os.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "task/context_internal.hpp"

namespace blitz::detail {

void submit_blocking(blocking_pool* p, std::shared_ptr<blocking_job> job) {
    p->submit(std::move(job));
}

blocking_pool* blocking_target() {
    if (const runtime_context* r = current_or_draining_runtime()) return r->blocking;
    throw std::logic_error(
        "blitz::spawn_blocking: no runtime on this thread; call runtime::spawn_blocking from "
        "outside a task");
}

blocking_pool::blocking_pool(options o) : opt_(std::move(o)) {}

blocking_pool::~blocking_pool() { shutdown(); }

void blocking_pool::submit(std::shared_ptr<blocking_job> job) {
    bool start = false;
    const blocking_job* raw = job.get();
    {
        std::lock_guard<std::mutex> l(mu_);
        if (shutdown_) {
            job->cancel();  // too late to run: the handle reports cancelled
            return;
        }
        queue_.push_back(std::move(job));
        // Start a thread unless an idle one is left for this job (one idle thread per queued
        // job), or the cap is reached (then the job waits its turn).
        const bool covered =
            BLITZ_FAULT(opt_.fault_one_idle_for_all) ? idle_ > 0 : idle_ >= queue_.size();
        if (!covered && (threads_ < opt_.max_threads || BLITZ_FAULT(opt_.fault_ignore_cap))) {
            ++threads_;
            ++spawned_;
            peak_ = std::max(peak_, threads_);
            start = true;
        }
    }
    if (start) {
        try {
            if (BLITZ_INJECTED_FAILURE(blocking_thread)) {  // faults build only
                throw std::system_error(
                    std::make_error_code(std::errc::resource_unavailable_try_again),
                    "injected failure");
            }
            std::thread([this] { thread_main(); }).detach();
        } catch (const std::system_error& e) {
            // No new thread. With a thread still in the pool, the job stays queued and runs in
            // its turn; with none, nothing would ever run it: it leaves the queue and the caller
            // gets the error. Either way it is never both failed and run, nor lost.
            std::lock_guard<std::mutex> l(mu_);
            --threads_;
            exit_cv_.notify_all();
            if (threads_ > 0 || shutdown_) {
                work_cv_.notify_one();
                return;
            }
            for (auto it = queue_.begin(); it != queue_.end(); ++it) {
                if (it->get() == raw) {
                    queue_.erase(it);
                    break;
                }
            }
            throw std::system_error(e.code(),
                                    "blitz::spawn_blocking: cannot start a blocking-pool "
                                    "thread and none is running");
        } catch (...) {
            std::lock_guard<std::mutex> l(mu_);
            --threads_;  // the job stays queued for an existing thread, or for shutdown
            exit_cv_.notify_all();
            throw;
        }
    } else {
        work_cv_.notify_one();
    }
}

void blocking_pool::thread_main() {
    pthread_setname_np(pthread_self(), opt_.thread_name.substr(0, 15).c_str());
    if (!opt_.cpus.empty()) os::set_this_thread_cpus(opt_.cpus);
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
        if (!queue_.empty()) {
            std::shared_ptr<blocking_job> job = std::move(queue_.front());
            queue_.pop_front();
            l.unlock();
            job->run();
            job.reset();
            l.lock();
            continue;
        }
        if (shutdown_) break;
        ++idle_;
        const bool woke =
            work_cv_.wait_for(l, opt_.keep_alive, [&] { return !queue_.empty() || shutdown_; });
#if BLITZ_FAULTS
        if (woke && opt_.test_wake_delay.count() > 0) {  // X1's burst: see options
            l.unlock();
            std::this_thread::sleep_for(opt_.test_wake_delay);
            l.lock();
        }
#endif
        --idle_;
        if (!woke) break;  // idle for keep_alive: retire
    }
    --threads_;
    exit_cv_.notify_all();  // under mu_: shutdown() may destroy the pool once it sees 0
}

void blocking_pool::shutdown() {
    std::deque<std::shared_ptr<blocking_job>> dropped;
    std::unique_lock<std::mutex> l(mu_);
    shutdown_ = true;
    dropped.swap(queue_);
    work_cv_.notify_all();
    l.unlock();
    for (auto& j : dropped) j->cancel();  // outside the lock: cancelling wakes tasks
    l.lock();
    exit_cv_.wait(l, [&] { return threads_ == 0; });
}

blocking_pool::stats blocking_pool::snapshot() const {
    std::lock_guard<std::mutex> l(mu_);
    return stats{threads_, idle_, queue_.size(), peak_, spawned_};
}

}  // namespace blitz::detail
