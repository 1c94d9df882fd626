// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::broadcast<T>(capacity): every subscriber sees every value sent after it subscribed, in
// order, or learns how many it missed (X6).

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "blitz/chan/cond_wait.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {

namespace detail {
template <class T>
struct broadcast_state {
    explicit broadcast_state(std::size_t cap) : ring(cap) {}
    detail::mutex mu;
    wait_queue waiters;
    std::vector<std::optional<T>> ring;  // value of sequence number s in ring[s % cap]
    std::uint64_t next = 0;              // sequence number of the next send
    std::size_t senders = 0, receivers = 0;
#if BLITZ_FAULTS
    bool fault_hide_lag = false;  // X6's negative control: lagging receivers skip silently
#endif
};
}  // namespace detail

// What a broadcast receive gives: a value, the number of values this receiver missed because
// it fell more than `capacity` behind (it then continues with the oldest value still held), or
// the end (every sender gone and everything read).
template <class T>
class broadcast_recv {
public:
    enum class status { value, lagged, closed };
    static broadcast_recv of(T v) { return broadcast_recv(status::value, std::move(v), 0); }
    static broadcast_recv lag(std::uint64_t n) {
        return broadcast_recv(status::lagged, std::nullopt, n);
    }
    static broadcast_recv end() { return broadcast_recv(status::closed, std::nullopt, 0); }

    status what() const noexcept { return st_; }
    bool has_value() const noexcept { return st_ == status::value; }
    bool lagged() const noexcept { return st_ == status::lagged; }
    bool closed() const noexcept { return st_ == status::closed; }
    std::uint64_t missed() const noexcept { return missed_; }
    T& value() {
        if (!v_) throw std::logic_error("blitz::broadcast_recv: no value");
        return *v_;
    }

private:
    broadcast_recv(status s, std::optional<T> v, std::uint64_t m)
        : st_(s), v_(std::move(v)), missed_(m) {}
    status st_;
    std::optional<T> v_;
    std::uint64_t missed_;
};

template <class T>
class broadcast_sender;

// A subscriber. Move-only; rx.resubscribe() makes another one at the current end.
template <class T>
class broadcast_receiver {
public:
    broadcast_receiver(broadcast_receiver&& o) noexcept : s_(std::move(o.s_)), pos_(o.pos_) {}
    ~broadcast_receiver() {
        if (!s_) return;
        detail::lock_guard l(s_->mu);
        --s_->receivers;
    }

    struct ready_pred {
        broadcast_receiver* r;
        bool operator()() const noexcept { return r->pos_ < r->s_->next || r->s_->senders == 0; }
    };
    class [[nodiscard]] recv_awaiter {
    public:
        explicit recv_awaiter(broadcast_receiver& r)
            : r_(r), w_(r.s_->mu, r.s_->waiters, ready_pred{&r}) {
            w_.set_label("broadcast recv", r.s_.get());
        }
        bool await_ready() { return w_.await_ready(); }
        bool await_suspend(std::coroutine_handle<> h) { return w_.await_suspend(h); }
        broadcast_recv<T> await_resume() { return r_.take(); }

    private:
        broadcast_receiver& r_;
        detail::cond_awaiter<ready_pred> w_;
    };
    // co_await rx.recv(): the next value, a lag count, or the end.
    recv_awaiter recv() { return recv_awaiter(*this); }
    // The same without waiting; nullopt when nothing is there yet.
    std::optional<broadcast_recv<T>> try_recv() {
        {
            detail::lock_guard l(s_->mu);
            if (!ready_pred{this}()) return std::nullopt;
        }
        return take();
    }
    broadcast_receiver resubscribe() const {
        detail::lock_guard l(s_->mu);
        ++s_->receivers;
        return broadcast_receiver(s_, s_->next);
    }

private:
    friend class broadcast_sender<T>;
    broadcast_receiver(std::shared_ptr<detail::broadcast_state<T>> s, std::uint64_t pos)
        : s_(std::move(s)), pos_(pos) {}
    broadcast_recv<T> take() {
        detail::lock_guard l(s_->mu);
        auto& st = *s_;
        const std::uint64_t cap = st.ring.size();
        const std::uint64_t oldest = st.next > cap ? st.next - cap : 0;
        if (pos_ < oldest) {
            const std::uint64_t missed = oldest - pos_;
            pos_ = oldest;
            if (!BLITZ_FAULT(st.fault_hide_lag)) return broadcast_recv<T>::lag(missed);
        }
        if (pos_ < st.next) return broadcast_recv<T>::of(*st.ring[pos_++ % cap]);
        return broadcast_recv<T>::end();
    }

    std::shared_ptr<detail::broadcast_state<T>> s_;
    std::uint64_t pos_;  // sequence number of the next value this receiver reads
};

// The sending half; copies count as senders. When the last goes, receivers read what is left
// and then see the end.
template <class T>
class broadcast_sender {
public:
    explicit broadcast_sender(std::shared_ptr<detail::broadcast_state<T>> s) : s_(std::move(s)) {
        detail::lock_guard l(s_->mu);
        ++s_->senders;
    }
    broadcast_sender(const broadcast_sender& o) : broadcast_sender(o.s_) {}
    broadcast_sender(broadcast_sender&& o) noexcept = default;
    ~broadcast_sender() {
        if (s_) detail::leave_and_wake_if_last(s_->mu, s_->senders, s_->waiters);
    }

    // Sends a copy to every current subscriber; returns how many there are (0: nobody got it).
    std::size_t send(T v) {
        detail::wake_batch b;
        detail::unique_lock l(s_->mu);
        auto& st = *s_;
        st.ring[st.next % st.ring.size()].emplace(std::move(v));
        ++st.next;
        const std::size_t n = st.receivers;
        detail::wake_all(s_->waiters, s_->mu, b);
        l.unlock();
        b.flush();
        return n;
    }
    broadcast_receiver<T> subscribe() const {
        detail::lock_guard l(s_->mu);
        ++s_->receivers;
        return broadcast_receiver<T>(s_, s_->next);
    }

private:
#if BLITZ_FAULTS
    friend struct testing::access;
#endif
    std::shared_ptr<detail::broadcast_state<T>> s_;
};

// A broadcast channel keeping the last `capacity` values (>= 1). T is copied to each receiver.
template <class T>
std::pair<broadcast_sender<T>, broadcast_receiver<T>> broadcast(std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("blitz::broadcast: capacity must be at least 1");
    broadcast_sender<T> tx(std::make_shared<detail::broadcast_state<T>>(capacity));
    auto rx = tx.subscribe();
    return {std::move(tx), std::move(rx)};
}

}  // namespace blitz
