#pragma once
// blitz::oneshot<T>(): one value from one sender to one receiver (X6).

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "blitz/chan/channel.hpp"
#include "blitz/chan/cond_wait.hpp"

namespace blitz {

namespace detail {
template <class T>
struct oneshot_state {
    std::mutex mu;
    wait_queue waiters;  // the receiver, at most
    std::optional<T> value;
    bool sender_gone = false, receiver_gone = false;
};
}  // namespace detail

template <class T>
class oneshot_sender;
template <class T>
class oneshot_receiver;
template <class T>
std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot();

// Sends at most one value: send() consumes the sender. Dropping it unsent closes the channel.
template <class T>
class oneshot_sender {
public:
    oneshot_sender(oneshot_sender&&) noexcept = default;
    oneshot_sender& operator=(oneshot_sender&& o) noexcept {
        close();
        s_ = std::move(o.s_);
        return *this;
    }
    ~oneshot_sender() { close(); }

    // Delivers v, or hands it back (closed()) if the receiver is gone.
    send_result<T> send(T v) && {
        auto s = std::move(s_);
        detail::wake_batch b;
        {
            std::unique_lock<std::mutex> l(s->mu);
            if (s->receiver_gone) return send_result<T>::back(send_result<T>::status::closed, std::move(v));
            s->value.emplace(std::move(v));
            s->sender_gone = true;
            detail::wake_all(s->waiters, l, b);
        }
        return send_result<T>::ok();
    }
    bool is_closed() const {
        std::lock_guard<std::mutex> l(s_->mu);
        return s_->receiver_gone;
    }

private:
    friend std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot<T>();
    explicit oneshot_sender(std::shared_ptr<detail::oneshot_state<T>> s) : s_(std::move(s)) {}
    void close() noexcept {
        if (!s_) return;
        detail::wake_batch b;
        std::unique_lock<std::mutex> l(s_->mu);
        s_->sender_gone = true;
        detail::wake_all(s_->waiters, l, b);
        l.unlock();
        b.flush();
        s_.reset();
    }
    std::shared_ptr<detail::oneshot_state<T>> s_;
};

// Receives the value: `co_await rx` (or rx.recv()) gives it, or nullopt if the sender went away
// without sending. Exactly one of the two is observed, once.
template <class T>
class oneshot_receiver {
public:
    oneshot_receiver(oneshot_receiver&&) noexcept = default;
    oneshot_receiver& operator=(oneshot_receiver&& o) noexcept {
        close();
        s_ = std::move(o.s_);
        return *this;
    }
    ~oneshot_receiver() { close(); }

    struct ready_pred {
        detail::oneshot_state<T>* s;
        bool operator()() const noexcept { return s->value.has_value() || s->sender_gone; }
    };
    class [[nodiscard]] recv_awaiter {
    public:
        explicit recv_awaiter(detail::oneshot_state<T>& s) : s_(s), w_(s.mu, s.waiters, ready_pred{&s}) {}
        bool await_ready() { return w_.await_ready(); }
        bool await_suspend(std::coroutine_handle<> h) { return w_.await_suspend(h); }
        std::optional<T> await_resume() {
            std::lock_guard<std::mutex> l(s_.mu);
            return std::exchange(s_.value, std::nullopt);
        }

    private:
        detail::oneshot_state<T>& s_;
        detail::cond_awaiter<ready_pred> w_;
    };
    recv_awaiter recv() { return recv_awaiter(*s_); }
    recv_awaiter operator co_await() { return recv(); }

    enum class try_status { value, empty, closed };
    std::optional<T> try_recv(try_status* st = nullptr) {
        std::lock_guard<std::mutex> l(s_->mu);
        if (s_->value) {
            if (st) *st = try_status::value;
            return std::exchange(s_->value, std::nullopt);
        }
        if (st) *st = s_->sender_gone ? try_status::closed : try_status::empty;
        return std::nullopt;
    }

private:
    friend std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot<T>();
    explicit oneshot_receiver(std::shared_ptr<detail::oneshot_state<T>> s) : s_(std::move(s)) {}
    void close() noexcept {
        if (!s_) return;
        auto s = std::move(s_);  // the state outlives the lock below
        std::lock_guard<std::mutex> l(s->mu);
        s->receiver_gone = true;
        s->value.reset();  // a value nobody will take is destroyed now
    }
    std::shared_ptr<detail::oneshot_state<T>> s_;
};

// One allocation (the shared state); none to send or receive.
template <class T>
std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot() {
    auto s = std::make_shared<detail::oneshot_state<T>>();
    return {oneshot_sender<T>(s), oneshot_receiver<T>(s)};
}

}  // namespace blitz
