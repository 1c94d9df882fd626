// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::oneshot<T>(): one value from one sender to one receiver (X6).

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

#include "blitz/chan/channel.hpp"
#include "blitz/detail/atomic.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/waker.hpp"

namespace blitz {

namespace detail {
// The state both ends share. Lock-free: one word of flags decides who owns the value, the
// receiver's waker and the state itself at every step. There is no reference count: the end
// that finds the other's "done" flag already set when it sets its own frees the state, and an
// end that sees the other done with a plain load frees it without writing at all (the common
// case: a receiver that got its value).
template <class T>
struct oneshot_state {
    static constexpr std::uint32_t sent = 1;        // the value is in `value`
    static constexpr std::uint32_t tx_gone = 2;     // the sender finished (sent or dropped)
    static constexpr std::uint32_t rx_waiting = 4;  // `rx_waker` is registered
    static constexpr std::uint32_t rx_gone = 8;     // the receiver is done with the state
    static constexpr std::uint32_t tx_done = 16;    // the sender is done with the state

    detail::atomic<std::uint32_t> bits{0};
    waker rx_waker;  // written by the receiver before rx_waiting; taken by the sender after
    std::optional<T> value;

    // From the per-thread block cache task frames use: a oneshot per request costs no heap
    // allocation once the cache is warm (over-aligned values go to the heap).
    static constexpr bool over_aligned = alignof(oneshot_state) > __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    static void* operator new(std::size_t n) {
        if constexpr (over_aligned) {
            return ::operator new(n, std::align_val_t{alignof(oneshot_state)});
        } else {
            return cached_alloc(n);
        }
    }
    static void operator delete(void* p, std::size_t n) noexcept {
        if constexpr (over_aligned) {
            ::operator delete(p, std::align_val_t{alignof(oneshot_state)});
        } else {
            cached_free(p, n);
        }
    }

    static bool finished(std::uint32_t b) noexcept { return b & (sent | tx_gone); }

    // The sender's last step (add: sent | tx_gone, or tx_gone alone). Returns true when the
    // receiver was already gone: the caller is then the last owner (it takes back the value it
    // put in, if any, and deletes the state). Otherwise the state may be gone on return.
    bool sender_finish(std::uint32_t add) noexcept {
        std::uint32_t b = bits.load(std::memory_order_relaxed);
        // acq_rel: publishes the value; sees the receiver's waker if it registered first.
        // Without a registered waker the sender has nothing left to do here: it says so in the
        // same write. With one, it must still take the waker, so tx_done waits.
        while (!bits.compare_exchange_weak(b, b | add | ((b & rx_waiting) ? 0 : tx_done),
                                           std::memory_order_acq_rel, std::memory_order_relaxed)) {
        }
        if (b & rx_gone) return true;  // the receiver left; it will not touch the state again
        if (!(b & rx_waiting)) return false;
        // The waker is the sender's now (the receiver's abandon path leaves it alone once it
        // sees a finished flag). Take it, then let go of the state, then wake.
        waker w = static_cast<waker&&>(rx_waker);
        // acq_rel: the receiver, if it let go first, did everything before; if it comes later
        // it sees this sender's work
        if (bits.fetch_or(tx_done, std::memory_order_acq_rel) & rx_gone) delete this;
        // (the model's oneshot_skip_wake control leaves the wake out)
        if (!BLITZ_MODEL_DEFECT(oneshot_skip_wake)) static_cast<waker&&>(w).wake();
        return false;
    }
    // The receiver lets go of the state.
    void receiver_release() noexcept {
        // acquire: the sender's tx_done; everything it did to the state happened before
        if (bits.load(std::memory_order_acquire) & tx_done) {
            delete this;  // the sender is done for good: no write needed
            return;
        }
        // (the model's oneshot_last_keeps_state control: the last end forgets to free it)
        if ((bits.fetch_or(rx_gone, std::memory_order_acq_rel) & tx_done) &&
            !BLITZ_MODEL_DEFECT(oneshot_last_keeps_state)) {
            delete this;
        }
    }
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
    using state = detail::oneshot_state<T>;

public:
    oneshot_sender(oneshot_sender&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    oneshot_sender& operator=(oneshot_sender&& o) noexcept {
        if (this != &o) {
            close();
            s_ = std::exchange(o.s_, nullptr);
        }
        return *this;
    }
    ~oneshot_sender() { close(); }

    // Delivers v, or hands it back (closed()) if the receiver is gone.
    // Throws std::logic_error on a sender that already sent or was moved from.
    send_result<T> send(T v) && {
        if (!s_)
            throw std::logic_error(
                "blitz::oneshot_sender::send: the sender already sent or was moved from");
        state* s = std::exchange(s_, nullptr);
        // acquire: the receiver let go for good; everything it did happened before
        if (s->bits.load(std::memory_order_acquire) & state::rx_gone) {
            delete s;
            return send_result<T>::back(send_result<T>::status::closed, std::move(v));
        }
        s->value.emplace(std::move(v));
        if (s->sender_finish(state::sent | state::tx_gone)) {
            // The receiver left meanwhile and will not touch the value: it goes back.
            T back = std::move(*s->value);
            delete s;
            return send_result<T>::back(send_result<T>::status::closed, std::move(back));
        }
        return send_result<T>::ok();
    }
    // True once the receiver is gone (or this sender is spent).
    bool is_closed() const noexcept {
        return !s_ || (s_->bits.load(std::memory_order_acquire) & state::rx_gone);
    }

private:
    friend std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot<T>();
    explicit oneshot_sender(state* s) noexcept : s_(s) {}
    void close() noexcept {
        if (!s_) return;
        state* s = std::exchange(s_, nullptr);
        if (s->sender_finish(state::tx_gone)) delete s;  // the receiver was gone: we are last
    }
    state* s_;
};

// Receives the value: `co_await rx` (or rx.recv()) gives it, or nullopt if the sender went away
// without sending. Exactly one of the two is observed, once.
template <class T>
class oneshot_receiver {
    using state = detail::oneshot_state<T>;

public:
    oneshot_receiver(oneshot_receiver&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    oneshot_receiver& operator=(oneshot_receiver&& o) noexcept {
        if (this != &o) {
            close();
            s_ = std::exchange(o.s_, nullptr);
        }
        return *this;
    }
    ~oneshot_receiver() { close(); }

    class [[nodiscard]] recv_awaiter : private ::blitz::detail::ready_hook {
    public:
        explicit recv_awaiter(state& s) noexcept : s_(s) {}
        recv_awaiter(const recv_awaiter&) = delete;
        recv_awaiter& operator=(const recv_awaiter&) = delete;
        ~recv_awaiter() {
            if (!registered_ || resumed_) return;
            // Abandoned while registered: take the waker back unless the sender already owns it.
            const std::uint32_t prev =
                s_.bits.fetch_and(~state::rx_waiting, std::memory_order_acq_rel);
            if (!s_.finished(prev)) s_.rx_waker.reset();
        }

        bool await_ready() noexcept {
            if (detail::coop_exhausted()) {  // B2: out of budget for this poll; yield first
                coop_yield_ = true;
                return false;
            }
            if (!s_.finished(s_.bits.load(std::memory_order_acquire))) return false;
            detail::coop_spend();
            return true;
        }
        bool await_suspend(std::coroutine_handle<> h) {
            task_ = detail::suspend_current(h, &ready, this);
            if (coop_yield_) {
                detail::mark_yielded(task_);  // back of the ring; registers on return
                return true;
            }
            return enroll();
        }
        std::optional<T> await_resume() {
            resumed_ = true;
            return std::exchange(s_.value, std::nullopt);  // empty: closed, or already taken
        }

    private:
        // Registers the task's waker; false if the sender finished first (do not suspend).
        bool enroll() {
            s_.rx_waker = task_->make_waker();
            // acq_rel: publishes the waker; sees the value if the sender came first
            const std::uint32_t prev =
                s_.bits.fetch_or(state::rx_waiting, std::memory_order_acq_rel);
            if (s_.finished(prev)) {  // the sender saw no waiter and will not touch the waker
                s_.rx_waker.reset();
                return false;
            }
            registered_ = true;
            return true;
        }
        static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
            auto* a = const_cast<recv_awaiter*>(static_cast<const recv_awaiter*>(p));
            if (a->coop_yield_) {  // back from a budget yield: wait properly now
                a->coop_yield_ = false;
                return !a->enroll();
            }
            return a->s_.finished(a->s_.bits.load(std::memory_order_acquire));
        }

        state& s_;
        detail::task_header* task_ = nullptr;
        bool registered_ = false;
        bool resumed_ = false;
        bool coop_yield_ = false;
    };
    // Throws std::logic_error on a moved-from receiver.
    recv_awaiter recv() { return recv_awaiter(checked()); }
    recv_awaiter operator co_await() { return recv(); }

    enum class try_status { value, empty, closed };
    std::optional<T> try_recv(try_status* st = nullptr) {
        checked();
        const std::uint32_t b = s_->bits.load(std::memory_order_acquire);
        if ((b & state::sent) && s_->value) {
            if (st) *st = try_status::value;
            return std::exchange(s_->value, std::nullopt);
        }
        if (st) *st = s_->finished(b) ? try_status::closed : try_status::empty;
        return std::nullopt;
    }

private:
    friend std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot<T>();
    explicit oneshot_receiver(state* s) noexcept : s_(s) {}
    state& checked() const {
        if (!s_) throw std::logic_error("blitz::oneshot_receiver: used after being moved from");
        return *s_;
    }
    void close() noexcept {
        if (!s_) return;
        // A value sent and not taken is destroyed with the state (by whichever end lets go
        // last); one sent after this goes back to the sender.
        std::exchange(s_, nullptr)->receiver_release();
    }
    state* s_;
};

// One allocation (the shared state); none to send or receive.
template <class T>
std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot() {
    auto* s = new detail::oneshot_state<T>();
    return {oneshot_sender<T>(s), oneshot_receiver<T>(s)};
}

}  // namespace blitz
