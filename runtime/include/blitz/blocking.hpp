// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::spawn_blocking: run blocking or CPU-heavy code on the runtime's blocking pool (X1).

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/waker.hpp"

namespace blitz {

namespace detail {

class blocking_pool;

// One job: the pool runs it (or cancels it at shutdown) exactly once; the handle waits for it.
// Completion is published by `state_` (release) after the result is stored; the waker is taken
// and the condition variable signalled under mu_, and the waker is called after mu_ is released.
class blocking_job {
public:
    enum : int { pending = 0, finished = 1, cancelled = 2 };
    virtual ~blocking_job() = default;

    void run() noexcept {
        invoke();
        complete(finished);
    }
    void cancel() noexcept { complete(cancelled); }

    int state() const noexcept { return state_.load(std::memory_order_acquire); }
    // Stores `w` to be woken on completion; false if it already completed.
    bool register_waker(waker w) {
        std::lock_guard<std::mutex> l(mu_);
        if (state() != pending) return false;
        w_ = std::move(w);
        return true;
    }
    void wait() {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return state() != pending; });
    }

protected:
    virtual void invoke() noexcept = 0;  // runs the function, storing its value or exception

private:
    void complete(int s) noexcept {
        waker w;
        {
            std::lock_guard<std::mutex> l(mu_);
            state_.store(s, std::memory_order_release);  // the result is complete
            w = std::move(w_);
            cv_.notify_all();
        }
        std::move(w).wake();
    }

    detail::atomic<int> state_{pending};
    std::mutex mu_;
    std::condition_variable cv_;
    waker w_;
};

template <class T, class F>
class blocking_job_of final : public blocking_job {
public:
    explicit blocking_job_of(F f) : f_(std::move(f)) {}

    T take() {
        if (state() == cancelled) throw task_cancelled();
        if (err_) std::rethrow_exception(err_);
        if constexpr (std::is_void_v<T>) {
            return;
        } else {
            return std::move(*value_);
        }
    }

private:
    void invoke() noexcept override {
        try {
            if constexpr (std::is_void_v<T>) {
                f_();
            } else {
                value_.emplace(f_());
            }
        } catch (...) {
            err_ = std::current_exception();
        }
    }
    F f_;
    std::conditional_t<std::is_void_v<T>, char, std::optional<T>> value_{};
    std::exception_ptr err_;
};

// Hands a job to pool `p` (cancels it at once if the pool is shutting down).
void submit_blocking(blocking_pool* p, std::shared_ptr<blocking_job> job);
// The current runtime's pool (or the draining one's); throws std::logic_error on a plain thread.
blocking_pool* blocking_target();

}  // namespace detail

// The handle of a spawn_blocking job: `co_await h` inside a task, or h.join() from a plain
// thread, gives the function's value, rethrows its exception, or throws task_cancelled if the
// runtime shut down before the job started. Dropping the handle lets the job run on.
template <class T>
class [[nodiscard]] blocking_handle {
public:
    using job_type = detail::blocking_job;

    template <class F>
    explicit blocking_handle(std::shared_ptr<detail::blocking_job_of<T, F>> j)
        : job_(j), take_([](detail::blocking_job* b) -> T {
              return static_cast<detail::blocking_job_of<T, F>*>(b)->take();
          }) {}

    bool is_finished() const noexcept { return job_->state() != job_type::pending; }

    // Plain threads only (a worker would block its tasks).
    T join() {
        job_->wait();
        return take_(job_.get());
    }

    class awaiter : private ::blitz::detail::ready_hook {
    public:
        explicit awaiter(blocking_handle& h) noexcept : h_(h) {}
        bool await_ready() const noexcept { return h_.is_finished(); }
        bool await_suspend(std::coroutine_handle<> c) {
            detail::task_header* t = detail::suspend_current(c, &ready, this, &describe);
            return h_.job_->register_waker(t->make_waker());
        }
        T await_resume() { return h_.take_(h_.job_.get()); }

    private:
        static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
            [[maybe_unused]] const auto* a = static_cast<const awaiter*>(p);
            out.kind = "blocking job";
        }
        static bool ready(const ::blitz::detail::ready_hook* a) noexcept {
            return static_cast<const awaiter*>(a)->h_.is_finished();
        }
        blocking_handle& h_;
    };
    awaiter operator co_await() & noexcept { return awaiter(*this); }
    awaiter operator co_await() && noexcept { return awaiter(*this); }

private:
    std::shared_ptr<detail::blocking_job> job_;
    T (*take_)(detail::blocking_job*);
};

// Runs f() on the blocking pool of the runtime running the calling task. One allocation (the
// job with its result). Throws std::logic_error outside a runtime task; use
// runtime::spawn_blocking there.
template <class F>
auto spawn_blocking(F f) -> blocking_handle<std::invoke_result_t<F&>> {
    using T = std::invoke_result_t<F&>;
    auto job = std::make_shared<detail::blocking_job_of<T, F>>(std::move(f));
    detail::submit_blocking(detail::blocking_target(), job);
    return blocking_handle<T>(std::move(job));
}

}  // namespace blitz
