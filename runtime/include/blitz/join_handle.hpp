// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::join_handle<T>: the owner's end of a spawned task.

#include <coroutine>
#include <stdexcept>
#include <utility>

#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/task.hpp"

namespace blitz {

// Thrown when the result of a cancelled (aborted, or shut down) task is requested.
class task_cancelled : public std::runtime_error {
public:
    task_cancelled() : std::runtime_error("blitz: the task was cancelled before it completed") {}
};

namespace detail {
struct join_handle_access;
void abort_task(task_header* t) noexcept;
// Blocks the calling plain thread until `t` completes. Throws std::logic_error on a worker.
void wait_blocking(task_header* t);
}  // namespace detail

// The id of the task being polled on this thread (the one join_handle::id() returns for it), or
// 0 outside a task.
inline std::uint64_t this_task_id() noexcept {
    const detail::task_header* t = detail::current_task();
    return t ? t->id() : 0;
}

// The handle spawn() returns. It holds one reference to the task, never the task's life:
// dropping the handle (or detach()) lets the task run on, unobserved.
//
// 1. `co_await h` inside a task suspends until the task completes, then yields its value,
//    rethrows its exception, or throws task_cancelled (K5).
// 2. `h.join()` does the same by blocking a plain thread.
// 3. `h.abort()` requests cancellation (K4): an idle or queued task is cancelled before its next
//    poll, a running one when its poll returns, unless a cancel_shield is up.
//
// Invariants: the result is taken at most once; one waiter at a time.
// Thread-safety: a handle is a value; use it from one thread at a time. abort() and
// is_finished() may race with the task itself.
template <class T>
class [[nodiscard]] join_handle {
public:
    join_handle() noexcept = default;
    explicit join_handle(detail::task_header* h) noexcept : h_(h) {}
    join_handle(join_handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    join_handle& operator=(join_handle&& o) noexcept {
        if (this != &o) {
            release();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    ~join_handle() { release(); }

    bool valid() const noexcept { return h_ != nullptr; }
    // The task's id (unique in the process among the first 2^48 taken, never 0; 0 for an empty
    // handle), as stall reports and blitz::this_task_id() name it.
    std::uint64_t id() const noexcept { return h_ ? h_->id() : 0; }
    bool is_finished() const noexcept { return h_ && h_->is_complete(); }
    // True once the task has completed as cancelled.
    bool is_cancelled() const noexcept { return is_finished() && h_->is_cancelled_result(); }

    void abort() const noexcept {
        if (h_) detail::abort_task(h_);
    }
    // Gives up the handle; the task keeps running and frees itself when done.
    // An exception it ends with goes to config::on_unhandled_exception.
    void detach() noexcept {
        if (h_) std::exchange(h_, nullptr)->detach_handle();
    }

    // Blocks a plain (non-worker) thread until the task completes; returns its result.
    T join() {
        check_valid();
        if (!h_->is_complete()) detail::wait_blocking(h_);
        return take();
    }

    // For combinators (timeout): registers / withdraws a waker for this task's completion.
    // register returns false when the task has already completed.
    bool register_join_waker(waker w) const {
        check_valid();
        return h_->set_join_waker(std::move(w));
    }
    void unregister_join_waker() const noexcept {
        if (h_) h_->unset_join_waker();
    }
    // For task_scope: the task behind the handle (no reference taken).
    detail::task_header* header_for_scope() const noexcept { return h_; }

    auto operator co_await() noexcept {
        struct awaiter : private ::blitz::detail::ready_hook {
            explicit awaiter(join_handle* h) noexcept : self(h) {}
            join_handle* self;
            bool registered = false;
            bool await_ready() const noexcept { return self->h_ && self->h_->is_complete(); }
            bool await_suspend(std::coroutine_handle<> c) {
                self->check_valid();
                detail::task_header* me = detail::suspend_current(c, &ready, this, &describe);
                registered = self->h_->set_join_waker(me->make_waker());
                return registered;  // false: already complete, continue at once
            }
            static void describe(const ::blitz::detail::ready_hook* a, wait_point& out) {
                out.kind = "join";
                out.task = static_cast<const awaiter*>(a)->self->h_->id();
                out.provable = true;  // only the target's completion ends it
                out.ended_by_tasks.push_back(out.task);
            }
            static bool ready(const ::blitz::detail::ready_hook* a) noexcept {
                return static_cast<const awaiter*>(a)->self->h_->is_complete();
            }
            T await_resume() {
                registered = false;  // the completer consumed the waker
                return self->take();
            }
            ~awaiter() {
                // Destroyed while still waiting (the awaiting task was cancelled).
                if (registered) self->h_->unset_join_waker();
            }
        };
        return awaiter{this};
    }

private:
    friend struct detail::join_handle_access;  // join_set reads the outcome of a finished task
    void check_valid() const {
        if (!h_) throw std::logic_error("blitz::join_handle: empty (moved-from or detached)");
    }
    T take() {
        check_valid();
        if (h_->is_cancelled_result()) throw task_cancelled();
        if (taken_) throw std::logic_error("blitz::join_handle: the result was already taken");
        taken_ = true;
        // The result sits outside the frame (destroyed when the task completed).
        return detail::take_from<T>(*static_cast<detail::result_slot<T>*>(h_->result_slot()));
    }
    // Dropping the handle gives up interest in the outcome: an exception the task ends with
    // afterwards is reported as unhandled.
    void release() noexcept {
        if (h_) std::exchange(h_, nullptr)->drop_handle(/*interested=*/true);
    }

    detail::task_header* h_ = nullptr;
    bool taken_ = false;
};

}  // namespace blitz
