// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::watch<T>(initial): a versioned latest value; receivers wait for changes (X6).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "blitz/chan/cond_wait.hpp"
#include "blitz/detail/atomic.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {

namespace detail {
template <class T>
struct watch_state {
    explicit watch_state(T v) : value(std::move(v)) {}
    detail::mutex mu;
    wait_queue waiters;
    T value;
    // Bumped by every send (under mu, release); never goes back. Read without the lock
    // (acquire) for the "changed?" fast paths; the value itself is read under mu.
    detail::atomic<std::uint64_t> version{0};
    detail::atomic<bool> sender_gone{false};
#if BLITZ_FAULTS
    bool fault_skip_last = false;  // X6's negative control: the sender's going wakes nobody
#endif
};
}  // namespace detail

template <class T>
class watch_sender;
template <class T>
class watch_receiver;
template <class T>
std::pair<watch_sender<T>, watch_receiver<T>> watch(T initial);

// A watcher: borrow() reads the current value (and marks it seen); co_await rx.changed() waits
// for a version it has not seen and returns false once the sender is gone and the last value
// was seen. Copies watch independently.
template <class T>
class watch_receiver {
public:
    watch_receiver(const watch_receiver&) = default;
    watch_receiver(watch_receiver&&) noexcept = default;

    // The current value and its version; marks it seen.
    std::pair<T, std::uint64_t> borrow_and_update() {
        detail::lock_guard l(s_->mu);
        seen_ = s_->version.load(std::memory_order_relaxed);  // under mu: in step with value
        return {s_->value, seen_};
    }
    T borrow() { return borrow_and_update().first; }
    bool has_changed() const { return unseen(); }

    struct ready_pred {
        watch_receiver* r;
        bool operator()() const noexcept {
            return r->unseen() || r->s_->sender_gone.load(std::memory_order_acquire);
        }
    };
    class [[nodiscard]] changed_awaiter {
    public:
        explicit changed_awaiter(watch_receiver& r)
            : r_(r), w_(r.s_->mu, r.s_->waiters, ready_pred{&r}) {}
        bool await_ready() {
            // An unseen version needs no lock (B2's budget still applies through cond_awaiter
            // once it is spent).
            if (!detail::coop_exhausted() && r_.unseen()) {
                detail::coop_spend();
                return true;
            }
            return w_.await_ready();
        }
        bool await_suspend(std::coroutine_handle<> h) { return w_.await_suspend(h); }
        // true: a version not seen yet exists (read it with borrow_and_update); false: the
        // sender is gone and the last value was already seen.
        bool await_resume() { return r_.unseen(); }

    private:
        watch_receiver& r_;
        detail::cond_awaiter<ready_pred> w_;
    };
    changed_awaiter changed() { return changed_awaiter(*this); }

private:
    friend std::pair<watch_sender<T>, watch_receiver<T>> watch<T>(T);
    explicit watch_receiver(std::shared_ptr<detail::watch_state<T>> s) : s_(std::move(s)) {}
    // acquire: pairs with send's release bump
    bool unseen() const noexcept { return s_->version.load(std::memory_order_acquire) != seen_; }
    std::shared_ptr<detail::watch_state<T>> s_;
    std::uint64_t seen_ = 0;
};

template <class T>
class watch_sender {
public:
    watch_sender(watch_sender&&) noexcept = default;
    ~watch_sender() {
        if (!s_) return;
        detail::wake_batch b;
        detail::unique_lock l(s_->mu);
        s_->sender_gone.store(true, std::memory_order_release);
        if (!BLITZ_FAULT(s_->fault_skip_last)) detail::wake_all(s_->waiters, s_->mu, b);
        l.unlock();
        b.flush();
    }

    // Replaces the value and wakes every watcher.
    void send(T v) {
        detail::wake_batch b;
        detail::unique_lock l(s_->mu);
        s_->value = std::move(v);
        s_->version.fetch_add(1, std::memory_order_release);  // under mu: one writer at a time
        detail::wake_all(s_->waiters, s_->mu, b);
        l.unlock();
        b.flush();
    }
    watch_receiver<T> subscribe() const { return watch_receiver<T>(s_); }

private:
#if BLITZ_FAULTS
    friend struct testing::access;
#endif
    friend std::pair<watch_sender<T>, watch_receiver<T>> watch<T>(T);
    explicit watch_sender(std::shared_ptr<detail::watch_state<T>> s) : s_(std::move(s)) {}
    std::shared_ptr<detail::watch_state<T>> s_;
};

template <class T>
std::pair<watch_sender<T>, watch_receiver<T>> watch(T initial) {
    auto s = std::make_shared<detail::watch_state<T>>(std::move(initial));
    return {watch_sender<T>(s), watch_receiver<T>(s)};
}

}  // namespace blitz
