// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::task_scope and blitz::scoped: a group of spawned tasks that cannot outlive the code
// that started them, so they may borrow from it; and blitz::co_invoke, which keeps a callable
// alive for as long as the coroutine it made.

#include <atomic>
#include <coroutine>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "blitz/cancel.hpp"
#include "blitz/combinators.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/wait_list.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace blitz {

namespace detail {

// What a scope and its tasks share (the tasks' guards may outlive a scope destroyed by a
// runtime shutdown). Guarded by mu: the task list, the first error and the wait queue.
struct scope_state {
    detail::mutex mu;
    std::vector<task_header*> tasks BLITZ_GUARDED_BY(mu);  // one reference each, released when
                                                           // the scope goes
    std::size_t live BLITZ_GUARDED_BY(mu) = 0;  // spawned and not yet finished (frame alive)
    std::exception_ptr first_error BLITZ_GUARDED_BY(mu);
    wait_queue waiters BLITZ_GUARDED_BY(mu);

    ~scope_state() {
        for (task_header* t : tasks) t->unref();
    }
    // A task's frame is gone (finished, failed or cancelled).
    void done() noexcept {
        wake_batch b;
        detail::unique_lock l(mu);
        if (--live == 0) wake_all(waiters, mu, b);
        l.unlock();
        b.flush();
    }
    void abort_all() noexcept {
        std::vector<task_header*> ts;
        {
            detail::lock_guard l(mu);
            ts = tasks;  // abort outside the lock: a cancelled frame's guard takes it
            for (task_header* t : ts) t->ref();
        }
        for (task_header* t : ts) {
            cancel_here_if_idle(t);
            t->unref();
        }
    }
};

// A parameter of each scope task's frame: reports the frame's end to the scope, also when the
// frame is destroyed without ever running (a tracked task that was never awaited).
struct scope_guard {
    std::shared_ptr<scope_state> s;
    explicit scope_guard(std::shared_ptr<scope_state> st) noexcept : s(std::move(st)) {}
    scope_guard(scope_guard&&) noexcept = default;  // the moved-from guard reports nothing
    scope_guard& operator=(scope_guard&&) = delete;
    ~scope_guard() {
        if (s) s->done();
    }
};

// A scope's task and its guard in one parameter: members are destroyed in reverse order, so the
// task (which owns the awaited frame: the co_await only borrows it) goes before the guard
// reports it done. The order in which a coroutine destroys separate parameter copies is the
// compiler's (clang: last to first; g++ 12: first to last, see net::serve), and with the guard
// destroyed first a select's winner could resume (its losing branch's scope settled) while the
// task's frame was still being destroyed on another worker, its destructors touching the
// branch's frame (issue 45: X7 saw it in busy mode).
template <class T>
struct scoped_task_parts {
    scope_guard g;
    task<T> t;
};

template <class T>
task<T> scope_task(scoped_task_parts<T> p) {
    scope_state* s = p.g.s.get();
    try {
        if constexpr (std::is_void_v<T>) {
            co_await std::move(p.t);
        } else {
            co_return co_await std::move(p.t);
        }
    } catch (...) {
        {
            detail::lock_guard l(s->mu);
            if (!s->first_error) s->first_error = std::current_exception();
        }
        throw;
    }
}

// Waits until no scope task is live. With `watch_cancel`, it completes only when the awaiting
// task's own cancellation has been requested (under a shield) and the scope's tasks, aborted
// at that moment, are all gone; without, it also aborts them on such a request.
class scope_wait : private ::blitz::detail::ready_hook {
public:
    scope_wait(scope_state& s, bool watch_cancel) noexcept
        : s_(s), watch_cancel_(watch_cancel), node_(this) {}
    scope_wait(const scope_wait&) = delete;
    scope_wait& operator=(const scope_wait&) = delete;
    ~scope_wait() {
        detail::lock_guard l(s_.mu);
        if (node_.linked()) node_.unlink();
        node_.w.reset();
    }
    bool await_ready() {
        t_ = current_task();
        return check(/*link=*/false);
    }
    bool await_suspend(std::coroutine_handle<> h) {
        t_ = suspend_current(h, &ready, this, &describe);
        return !check(/*link=*/true);
    }
    void await_resume() const noexcept {}

private:
    bool cancel_requested() const noexcept {
        return t_ && (t_->load_state() & state::cancelled) != 0;
    }
    // Done? If not and `link`, makes sure a fresh waker is linked for the last task's end.
    bool check(bool link) {
        if (cancel_requested() && !aborted_) {
            aborted_ = true;
            s_.abort_all();  // outside the lock: a cancelled frame's guard takes it
        }
        detail::lock_guard l(s_.mu);
        if (s_.live == 0 && (!watch_cancel_ || aborted_)) return true;
        if (link && !node_.linked()) {
            node_.done.store(false, std::memory_order_relaxed);
            node_.w = t_->make_waker();
            s_.waiters.push_back(&node_);
        }
        return false;
    }
    static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
        [[maybe_unused]] const auto* a = static_cast<const scope_wait*>(p);
        out.kind = "task_scope join";
        out.object = &a->s_;
    }
    static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
        auto* a = const_cast<scope_wait*>(static_cast<const scope_wait*>(p));
        // Every poll looks again: the wake may be the cancellation request, not the queue's.
        return a->check(/*link=*/true);
    }

    scope_state& s_;
    const bool watch_cancel_;
    bool aborted_ = false;
    task_header* t_ = nullptr;
    wait_node node_;
};

}  // namespace detail

// A group of tasks spawned on the current runtime (in parallel, like blitz::spawn) that ends
// only when all of them have: they may borrow from the code that owns the scope.
//
// 1. spawn(t) starts t; spawn_with_handle(t) also returns its join handle.
// 2. co_await scope.join() waits for every task spawned so far and rethrows the first exception
//    any of them ended with. If the awaiting task is aborted meanwhile (under blitz::scoped's
//    shield), join aborts the scope's tasks and still waits for them.
// 3. abort_all() requests cancellation of every task of the scope.
// 4. A select or timeout around the owning code that decides against it waits, before dropping
//    it, until the scope's tasks (aborted at that moment) are gone. Destroying a scope whose tasks
//    are still live any other way (an abort without blitz::scoped, a branch dropped in the same
//    step it was registered) aborts them and blocks the thread until they are gone: idle tasks
//    are cancelled on the spot, one running elsewhere finishes its poll first, and one queued
//    behind the blocked worker with no other worker to take it would hang, so prefer scoped.
//
// Use blitz::scoped, which cannot forget the join. Thread-safety: spawn, abort_all and size from
// any thread; join from one task at a time. One allocation per scope, two per task (the task and
// its guard's frame).
class task_scope {
public:
    task_scope();
    task_scope(const task_scope&) = delete;
    task_scope& operator=(const task_scope&) = delete;
    ~task_scope();

    template <class T>
    void spawn(task<T> t, std::source_location site = std::source_location::current()) {
        (void)spawn_with_handle(std::move(t), site);
    }
    template <class T>
    join_handle<T> spawn_with_handle(task<T> t,
                                     std::source_location site = std::source_location::current()) {
        {
            detail::lock_guard l(s_->mu);
            ++s_->live;  // before the task can finish
        }
        auto h = blitz::spawn(
            detail::scope_task(detail::scoped_task_parts<T>{detail::scope_guard(s_), std::move(t)}),
            site);
        detail::task_header* hdr = h.header_for_scope();
        hdr->ref();
        detail::lock_guard l(s_->mu);
        s_->tasks.push_back(hdr);
        return h;
    }

    // co_await scope.join(): every task finished; the first exception among them rethrown.
    class join_awaiter : public detail::scope_wait {
    public:
        explicit join_awaiter(detail::scope_state& s) : scope_wait(s, false), s_(s) {}
        void await_resume() {
            std::exception_ptr e;
            {
                detail::lock_guard l(s_.mu);
                e = std::exchange(s_.first_error, nullptr);
            }
            if (e) std::rethrow_exception(e);
        }

    private:
        detail::scope_state& s_;
    };
    join_awaiter join() { return join_awaiter(*s_); }
    // Completes when the awaiting task's abort has been requested and every task of the scope,
    // aborted then, is gone (blitz::scoped races the body against it).
    detail::scope_wait cancelled() { return detail::scope_wait(*s_, true); }

    void abort_all() noexcept { s_->abort_all(); }
    // Tasks spawned and not yet finished.
    std::size_t size() const {
        detail::lock_guard l(s_->mu);
        return s_->live;
    }

private:
    static bool settle(detail::drop_hook* h) noexcept;
    void abort_and_wait_blocking() noexcept;

    std::shared_ptr<detail::scope_state> s_;
    // A select around the owning code that drops it waits for the tasks first (select_scope's
    // drop hooks, one per enclosing select, up to 8 deep; deeper ones fall back to blocking).
    static constexpr unsigned max_hooks = 8;
    detail::drop_hook hooks_[max_hooks];
    unsigned n_hooks_ = 0;
    detail::task_header* owner_ = nullptr;
    detail::wait_node drop_wait_;
};

// Runs body(scope) in the calling task with a fresh task_scope, and returns only when every task
// spawned through the scope has finished: after the body returns, after it throws (the scope's
// tasks are aborted first, then the body's exception is rethrown), and when the calling task is
// aborted (the body is dropped at its current await, the scope's tasks are aborted and waited
// for, then task_cancelled is thrown and the abort takes effect at the next await). A task of
// the scope that throws makes scoped rethrow that exception once all have finished.
//
//   co_await blitz::scoped([&](blitz::task_scope& s) -> blitz::task<void> {
//       for (auto& part : parts) s.spawn(process(part, shared_state));  // may borrow
//       co_return;
//   });
//
// The callable is kept alive until the body finishes (its captures stay valid).
template <class F>
auto scoped(F f) -> task<typename std::invoke_result_t<F&, task_scope&>::value_type> {
    using R = typename std::invoke_result_t<F&, task_scope&>::value_type;
    cancel_shield shield;  // an abort waits until the scope's tasks are gone
    task_scope scope;
    std::exception_ptr err;
    bool cancelled = false;
    std::optional<detail::value_or_unit<R>> out;
    try {
        auto r = co_await select(f(scope), scope.cancelled());
        if (r.index() == 1) {
            cancelled = true;
        } else {
            out.emplace(std::move(std::get<0>(r)));
        }
    } catch (...) {
        err = std::current_exception();
    }
    if (err || cancelled) scope.abort_all();
    std::exception_ptr child_error;
    try {
        co_await scope.join();
    } catch (...) {
        child_error = std::current_exception();
    }
    if (err) std::rethrow_exception(err);
    if (cancelled) throw task_cancelled();
    if (child_error) std::rethrow_exception(child_error);
    if constexpr (!std::is_void_v<R>) co_return std::move(*out);
}

// Counts a group of tasks it does not own, and lets a task wait until all of them are done and
// no more will come (Tokio's TaskTracker): for a graceful stop, close the tracker and await
// wait(). Tasks are never aborted by the tracker, and dropping it changes nothing for them.
//
// 1. Inside a task, spawn(t) runs t on the current runtime, counted (spawn_with_handle(t) also
//    returns its join handle); from any thread, rt.spawn(tracker.track(t)). track(t) returns t
//    wrapped so that it is counted from now until its frame is gone (awaited, spawned, or destroyed
//    without running).
// 2. close() says no more tasks are expected (spawn and track still work; the count just has
//    to reach zero again); reopen() takes that back.
// 3. co_await wait() completes once the tracker is closed and no tracked task is left.
//
// Thread-safety: every member from any thread. One allocation per tracker, two per task.
class task_tracker {
public:
    task_tracker() : s_(std::make_shared<detail::scope_state>()) { s_->live = 1; }  // 1: open
    task_tracker(const task_tracker&) = delete;
    task_tracker& operator=(const task_tracker&) = delete;

    template <class T>
    void spawn(task<T> t, std::source_location site = std::source_location::current()) {
        (void)spawn_with_handle(std::move(t), site);
    }
    template <class T>
    join_handle<T> spawn_with_handle(task<T> t,
                                     std::source_location site = std::source_location::current()) {
        return blitz::spawn(track(std::move(t)), site);
    }
    template <class T>
    task<T> track(task<T> t) {
        {
            detail::lock_guard l(s_->mu);
            ++s_->live;
        }
        return detail::scope_task(
            detail::scoped_task_parts<T>{detail::scope_guard(s_), std::move(t)});
    }
    // Returns false if it was already closed.
    bool close() {
        {
            detail::lock_guard l(s_->mu);
            if (closed_) return false;
            closed_ = true;
        }
        s_->done();  // the open count goes: waiters wake if nothing is left
        return true;
    }
    // Returns false if it was open.
    bool reopen() {
        detail::lock_guard l(s_->mu);
        if (!closed_) return false;
        closed_ = false;
        ++s_->live;
        return true;
    }
    bool is_closed() const {
        detail::lock_guard l(s_->mu);
        return closed_;
    }
    // Tracked tasks whose frames are not gone yet.
    std::size_t size() const {
        detail::lock_guard l(s_->mu);
        return s_->live - (closed_ ? 0 : 1);
    }
    // co_await tracker.wait(): closed and empty. Cancelling the waiter leaves the tasks alone.
    detail::scope_wait wait() { return detail::scope_wait(*s_, false); }

private:
    std::shared_ptr<detail::scope_state> s_;  // live counts tasks, plus one while open
    bool closed_ BLITZ_GUARDED_BY(s_->mu) = false;
};

// Calls f(args...) (which returns a task) and awaits it inside a coroutine that owns f and the
// arguments, so a lambda's captures live as long as the task runs:
//   blitz::spawn(blitz::co_invoke([name = std::string("job")]() -> blitz::task<void> { ... }));
// Spawning the lambda's task directly (`spawn([x]() -> task<void> {...}())`) would leave the
// coroutine reading captures of a temporary lambda that is already gone.
template <class F, class... Args>
auto co_invoke(F f, Args... args) -> std::invoke_result_t<F&, Args&...> {
    co_return co_await std::invoke(f, args...);
}

}  // namespace blitz
