// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::oneshot<T>(): one value from one sender to one receiver (X6).

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
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
    // oneshot_cell only: its destructor, or its sender being moved, holds the cell still. The
    // sender's finishing write waits while it is set (sender_finish), so the sender handle
    // outlives every look the holder takes at it.
    static constexpr std::uint32_t locked = 32;
    // oneshot_cell only: the destructor found its sender claimed (a send, drop or move in
    // progress) and waits for tx_done; a move that sees it closes the sender's new place and
    // says tx_done itself.
    static constexpr std::uint32_t rx_closing = 64;

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
        // The common case inline: nobody waits, nobody left, nothing held. acq_rel: publishes
        // the value (and sees nothing the receiver needs to hand over).
        std::uint32_t b = bits.load(std::memory_order_relaxed);
        if (!(b & (rx_waiting | rx_gone | locked)) &&
            bits.compare_exchange_strong(b, b | add | tx_done, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
            return false;
        }
        return sender_finish_slow(add);
    }
    [[gnu::noinline]] bool sender_finish_slow(std::uint32_t add) noexcept {
        std::uint32_t b = bits.load(std::memory_order_relaxed);
        // acq_rel: publishes the value; sees the receiver's waker if it registered first.
        // Without a registered waker the sender has nothing left to do here: it says so in the
        // same write. With one, it must still take the waker, so tx_done waits. The write
        // waits out a held cell (never set on a heap state; the control lets it through).
        for (;;) {
            if ((b & locked) && !BLITZ_MODEL_DEFECT(oneshot_cell_ignore_lock)) {
                wait_unlocked();
                b = bits.load(std::memory_order_relaxed);
                continue;
            }
            if (bits.compare_exchange_weak(b, b | add | ((b & rx_waiting) ? 0 : tx_done),
                                           std::memory_order_acq_rel, std::memory_order_relaxed)) {
                break;
            }
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
    // One step of waiting for a few steps of another thread: spin first, then yield.
    static void backoff(int i) noexcept {
        if (i < 64) {
            spin_pause();
        } else {
            std::this_thread::yield();
        }
    }
    // Out of line: a cell is held only for a few steps of another thread.
    [[gnu::noinline]] void wait_unlocked() const noexcept {
        for (int i = 0; bits.load(std::memory_order_relaxed) & locked; ++i) backoff(i);
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
template <class T>
class oneshot_cell;

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
        try {
            s->value.emplace(std::move(v));
        } catch (...) {
            // The send consumed the sender: the receiver sees it dropped, and the caller the
            // exception (before, the state was kept and the receiver waited for good).
            if (s->sender_finish(state::tx_gone)) delete s;
            throw;
        }
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
            task_ = detail::suspend_current(h, &ready, this, &describe);
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
        static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
            [[maybe_unused]] const auto* a = static_cast<const recv_awaiter*>(p);
            out.kind = "oneshot recv";
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
    std::optional<T> try_recv(try_status* st = nullptr) { return try_take(checked(), st); }

private:
    friend std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot<T>();
    friend class oneshot_cell<T>;
    explicit oneshot_receiver(state* s) noexcept : s_(s) {}
    // The value if it was sent and not yet taken (the receiving end's try_recv).
    static std::optional<T> try_take(state& s, try_status* st) {
        const std::uint32_t b = s.bits.load(std::memory_order_acquire);
        if ((b & state::sent) && s.value) {
            if (st) *st = try_status::value;
            // Moves the value itself out rather than exchanging the whole optional.
            std::optional<T> out(std::move(*s.value));
            s.value.reset();
            return out;
        }
        if (st) *st = s.finished(b) ? try_status::closed : try_status::empty;
        return std::nullopt;
    }
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

// A oneshot whose state lives inside this object, so making one allocates nothing (X6). The
// cell is the receiving end (`co_await cell`, try_recv); make_sender() gives its one sender,
// which moves like any oneshot_sender, to any task or thread. The cell itself stays where it was
// made: it is neither copyable nor movable.
//
// The cell may be destroyed at any time, also while its sender is live elsewhere (a receiving
// task aborted, a select branch that lost): the destructor closes the sender, whose send then
// hands its value back, as to a dropped receiver. A value sent and not taken is destroyed with
// the cell. The destructor waits only for a send, drop or move of the sender that is in progress
// on another thread, a few steps. Like any object, the cell must outlive the awaits on it.
//
// How the two ends stay apart without a shared allocation: the sender's word holds the cell's
// address. A send, drop or move first claims that word (sets `busy`), so the cell cannot finish
// its destructor under it; the destructor closes the word (address -> closed) unless it is
// claimed. The cell knows where its sender is (tx_); a move changes that only while holding the
// cell (`locked`), and the sender's last write to the cell waits while it is held, so the
// sender object is alive whenever the destructor looks at it. A destructor that finds the word
// claimed lets go of the cell for good and waits for tx_done: a send or drop says it when it
// finishes, and a move in progress sees `rx_closing`, closes the sender's new place and says it.
template <class T>
class oneshot_cell {
    using state = detail::oneshot_state<T>;

public:
    using try_status = typename oneshot_receiver<T>::try_status;
    using recv_awaiter = typename oneshot_receiver<T>::recv_awaiter;
    class sender;

    oneshot_cell() noexcept = default;
    oneshot_cell(const oneshot_cell&) = delete;
    oneshot_cell& operator=(const oneshot_cell&) = delete;
    ~oneshot_cell() {
        // acquire: the sender's tx_done; everything it did to the cell happened before
        if (made_ && !(s_.bits.load(std::memory_order_acquire) & state::tx_done)) close_sender();
    }

    // The cell's one sender. Throws std::logic_error when it was already made.
    sender make_sender() {
        if (made_)
            throw std::logic_error(
                "blitz::oneshot_cell::make_sender: the cell already made its sender");
        made_ = true;
        return sender(this);
    }
    // `co_await cell`: the value, or nullopt if the sender went away without sending.
    recv_awaiter recv() noexcept { return recv_awaiter(s_); }
    recv_awaiter operator co_await() noexcept { return recv(); }
    std::optional<T> try_recv(try_status* st = nullptr) {
        return oneshot_receiver<T>::try_take(s_, st);
    }

private:
    void lock() noexcept {
        std::uint32_t b = s_.bits.load(std::memory_order_relaxed);
        for (int i = 0;; ++i) {
            // acquire: the last holder's tx_ and sender word
            if (!(b & state::locked) &&
                s_.bits.compare_exchange_weak(b, b | state::locked, std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
                return;
            }
            state::backoff(i);
            b = s_.bits.load(std::memory_order_relaxed);
        }
    }
    void unlock() noexcept { s_.bits.fetch_and(~state::locked, std::memory_order_release); }
    [[gnu::noinline]] void close_sender() noexcept;

    state s_;
    sender* tx_ = nullptr;  // where the sender is; a move changes it only with the cell locked
    bool made_ = false;
};

template <class T>
class oneshot_cell<T>::sender {
public:
    sender(sender&& o) noexcept { take_from(o); }
    sender& operator=(sender&& o) noexcept {
        if (this != &o) {
            close();
            take_from(o);
        }
        return *this;
    }
    ~sender() { close(); }

    // Delivers v, or hands it back (closed()) if the cell is gone.
    // Throws std::logic_error on a sender that already sent or was moved from.
    send_result<T> send(T v) && {
        oneshot_cell* c = claim();
        if (!c) [[unlikely]]
            return send_to_nobody(std::move(v));
        if constexpr (std::is_nothrow_move_constructible_v<T>) {
            c->s_.value.emplace(std::move(v));
        } else {
            try {
                c->s_.value.emplace(std::move(v));
            } catch (...) {
                // The send consumed the sender: the cell sees it dropped, and the caller the
                // exception (a destructor waiting on this claim is let go too).
                c->s_.sender_finish(state::tx_gone);
                word_.store(0, std::memory_order_relaxed);
                throw;
            }
        }
        c->s_.sender_finish(state::sent | state::tx_gone);  // a cell never says rx_gone
        word_.store(0, std::memory_order_relaxed);          // the cell may be gone now
        return send_result<T>::ok();
    }
    // True once the cell is gone (or this sender is spent).
    bool is_closed() const noexcept { return word_.load(std::memory_order_acquire) <= closed; }

private:
    friend class oneshot_cell<T>;
    static constexpr std::uintptr_t closed = 1;  // the cell closed this sender (it is gone)
    static constexpr std::uintptr_t busy = 2;    // this sender is using the cell
    static std::uintptr_t address(const oneshot_cell* c) noexcept {
        return reinterpret_cast<std::uintptr_t>(c);
    }
    explicit sender(oneshot_cell* c) noexcept : word_(address(c)) { c->tx_ = this; }

    [[gnu::noinline]] send_result<T> send_to_nobody(T v) {
        if (word_.load(std::memory_order_relaxed) == 0)
            throw std::logic_error(
                "blitz::oneshot_cell::sender::send: the sender already sent or was moved from");
        word_.store(0, std::memory_order_relaxed);  // the cell closed it: it is gone
        return send_result<T>::back(send_result<T>::status::closed, std::move(v));
    }

    // The cell, claimed (it cannot finish its destructor until this sender lets go), or null
    // when the cell is gone or this sender is spent or moved from.
    oneshot_cell* claim() noexcept {
        // acquire (the load and a failed exchange): a word the cell closed was the cell's last
        // write to this object, which must happen before the object is destroyed or reused
        // (the model's oneshot_cell_claim_relaxed control makes the load relaxed)
        std::uintptr_t w =
            word_.load(BLITZ_ORDER(oneshot_cell_claim_relaxed, std::memory_order_acquire));
        while (w > closed && !word_.compare_exchange_weak(w, w | busy, std::memory_order_acquire,
                                                          std::memory_order_acquire)) {
        }
        return w > closed ? reinterpret_cast<oneshot_cell*>(w) : nullptr;
    }
    void close() noexcept {
        if (oneshot_cell* c = claim()) c->s_.sender_finish(state::tx_gone);
        word_.store(0, std::memory_order_relaxed);
    }
    void take_from(sender& o) noexcept {
        // acquire: as in claim(), for the word the cell closed
        std::uintptr_t w = o.word_.load(std::memory_order_acquire);
        for (;;) {
            if (w <= closed) {  // spent, or the cell is gone: nothing of the cell's to change
                word_.store(w, std::memory_order_relaxed);
                o.word_.store(0, std::memory_order_relaxed);
                return;
            }
            if (o.word_.compare_exchange_weak(w, w | busy, std::memory_order_acquire,
                                              std::memory_order_acquire)) {
                break;
            }
        }
        auto* c = reinterpret_cast<oneshot_cell*>(w);
        // (the model's oneshot_cell_move_unlocked control moves without holding the cell)
        const bool hold = !BLITZ_MODEL_DEFECT(oneshot_cell_move_unlocked);
        if (hold) c->lock();
        if (c->s_.bits.load(std::memory_order_relaxed) & state::rx_closing) {
            // The cell is being destroyed and waits for this move: the sender is closed here,
            // and tx_done (with the cell let go, in one write) lets the destructor return.
            word_.store(closed, std::memory_order_relaxed);
            c->s_.bits.fetch_xor((hold ? state::locked : 0) | state::tx_done,
                                 std::memory_order_release);
        } else {
            c->tx_ = this;
            word_.store(w, std::memory_order_relaxed);
            if (hold) c->unlock();  // release: the destructor, holding the cell next, finds us
        }
        o.word_.store(0, std::memory_order_relaxed);
    }

    detail::atomic<std::uintptr_t> word_;
};

template <class T>
void oneshot_cell<T>::close_sender() noexcept {
    if (!made_ || BLITZ_MODEL_DEFECT(oneshot_cell_no_close)) return;
    lock();
    // Held, the sender can neither say tx_gone nor move, so while it has not said tx_gone, tx_
    // is alive.
    if (!(s_.bits.load(std::memory_order_relaxed) & state::tx_gone)) {
        std::uintptr_t w = sender::address(this);
        // acq_rel: the sender that later finds its word closed sees everything before
        if (tx_->word_.compare_exchange_strong(w, sender::closed, std::memory_order_acq_rel,
                                               std::memory_order_relaxed)) {
            unlock();
            return;
        }
        // Claimed: a send or a drop (it will say tx_done) or a move (it will see rx_closing,
        // close its new place and say tx_done). Either way the cell lets go now and does not
        // take it again, so the two cannot keep undoing each other's step.
        s_.bits.fetch_xor(state::locked | state::rx_closing, std::memory_order_release);
    } else {
        unlock();  // finishing: it is taking the waker, a few steps
    }
    // acquire: the sender's tx_done; everything it did to the cell happened before
    for (int i = 0; !(s_.bits.load(std::memory_order_acquire) & state::tx_done); ++i) {
        state::backoff(i);
    }
}

// One allocation (the shared state); none to send or receive.
template <class T>
std::pair<oneshot_sender<T>, oneshot_receiver<T>> oneshot() {
    auto* s = new detail::oneshot_state<T>();
    return {oneshot_sender<T>(s), oneshot_receiver<T>(s)};
}

}  // namespace blitz
