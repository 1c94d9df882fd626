// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::unbounded_channel<T>(): many senders, one receiver, no capacity limit.

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "blitz/chan/channel.hpp"
#include "blitz/chan/cond_wait.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {

namespace detail {
template <class T>
struct unbounded_state {
    detail::mutex mu;
    wait_queue waiters;  // the receiver, at most
    std::deque<T> q;
    std::size_t senders = 0;
    bool receiver_gone = false;
};
}  // namespace detail

template <class T>
class unbounded_sender;
template <class T>
class unbounded_receiver;
template <class T>
std::pair<unbounded_sender<T>, unbounded_receiver<T>> unbounded_channel();

// Sending never waits (the queue grows; a send may allocate). Copies count as senders.
template <class T>
class unbounded_sender {
public:
    unbounded_sender(const unbounded_sender& o) : s_(o.s_) {
        detail::lock_guard l(s_->mu);
        ++s_->senders;
    }
    unbounded_sender(unbounded_sender&&) noexcept = default;
    ~unbounded_sender() {
        if (s_) detail::leave_and_wake_if_last(s_->mu, s_->senders, s_->waiters);
    }
    // Queues v, or hands it back if the receiver is gone.
    send_result<T> send(T v) {
        detail::wake_batch b;
        detail::unique_lock l(s_->mu);
        if (s_->receiver_gone)
            return send_result<T>::back(send_result<T>::status::closed, std::move(v));
        s_->q.push_back(std::move(v));
        detail::wake_all(s_->waiters, s_->mu, b);
        l.unlock();
        b.flush();
        return send_result<T>::ok();
    }

private:
    friend std::pair<unbounded_sender<T>, unbounded_receiver<T>> unbounded_channel<T>();
    explicit unbounded_sender(std::shared_ptr<detail::unbounded_state<T>> s) : s_(std::move(s)) {
        ++s_->senders;
    }
    std::shared_ptr<detail::unbounded_state<T>> s_;
};

template <class T>
class unbounded_receiver {
public:
    unbounded_receiver(unbounded_receiver&&) noexcept = default;
    ~unbounded_receiver() {
        if (!s_) return;
        auto s = std::move(s_);
        detail::lock_guard l(s->mu);
        s->receiver_gone = true;
        s->q.clear();
    }

    struct ready_pred {
        detail::unbounded_state<T>* s;
        bool operator()() const noexcept { return !s->q.empty() || s->senders == 0; }
    };
    class [[nodiscard]] recv_awaiter {
    public:
        explicit recv_awaiter(detail::unbounded_state<T>& s)
            : s_(s), w_(s.mu, s.waiters, ready_pred{&s}) {
            w_.set_label("channel recv", &s);
        }
        bool await_ready() { return w_.await_ready(); }
        bool await_suspend(std::coroutine_handle<> h) { return w_.await_suspend(h); }
        std::optional<T> await_resume() {
            detail::lock_guard l(s_.mu);
            if (s_.q.empty()) return std::nullopt;  // every sender gone, all read
            std::optional<T> v(std::move(s_.q.front()));
            s_.q.pop_front();
            return v;
        }

    private:
        detail::unbounded_state<T>& s_;
        detail::cond_awaiter<ready_pred> w_;
    };
    // co_await rx.recv(): the next value, or nullopt once every sender is gone and all is read.
    recv_awaiter recv() { return recv_awaiter(*s_); }
    std::optional<T> try_recv() {
        detail::lock_guard l(s_->mu);
        if (s_->q.empty()) return std::nullopt;
        std::optional<T> v(std::move(s_->q.front()));
        s_->q.pop_front();
        return v;
    }
    std::size_t len() const {
        detail::lock_guard l(s_->mu);
        return s_->q.size();
    }

private:
    friend std::pair<unbounded_sender<T>, unbounded_receiver<T>> unbounded_channel<T>();
    explicit unbounded_receiver(std::shared_ptr<detail::unbounded_state<T>> s) : s_(std::move(s)) {}
    std::shared_ptr<detail::unbounded_state<T>> s_;
};

template <class T>
std::pair<unbounded_sender<T>, unbounded_receiver<T>> unbounded_channel() {
    auto s = std::make_shared<detail::unbounded_state<T>>();
    return {unbounded_sender<T>(s), unbounded_receiver<T>(s)};
}

}  // namespace blitz
