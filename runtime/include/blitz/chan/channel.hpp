// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::channel<T>(capacity): a bounded multi-producer, multi-consumer channel (X5).

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/holder_list.hpp"
#include "blitz/sync/semaphore.hpp"
#include "blitz/testing/fault_injection.hpp"

namespace blitz {

namespace detail {

// The shared state. Values live in a ring of `size` slots (cap rounded up to a power of two, so
// a position's slot and lap are a mask and a shift, not a division), each with a turn counter:
// the slot of position p is free for the writer of p when turn == 2 * lap(p) and holds p's value
// when turn == 2 * lap(p) + 1. Two FIFO semaphores count free slots (cap of them, not size) and
// ready values, so at most cap positions are in flight and a position handed out always finds
// its slot within a few instructions of the previous occupant's hand-over (a short spin), never
// a lost value.
//
// Positions are 32-bit and wrap: a writer's position is a ticket of the free-slot semaphore, so
// try_send takes its slot and learns where it is in one compare-exchange (an awaiting send, whose
// permit may come from the wait queue, takes its ticket when it writes); a reader's is the low
// 32 bits of a 64-bit count. Laps then wrap too, at 2^(32 - log2 size), and turns are kept
// modulo twice that, so the turn after the last lap's value is the first lap's "free".
//
// Invariants (X5): values in the ring <= cap; every value pushed is popped exactly once, or
// destroyed with the channel; a producer's values leave in the order it pushed them.
// Thread-safety: any thread; waiting only inside tasks.
template <class T>
class chan_state {
public:
    // The largest capacity (its ring's positions must fit in 32 bits, beside the free count).
    static constexpr std::size_t max_capacity = std::size_t{1} << 30;

    // `first` numbers the first position (0; tests start near the wrap-around).
    explicit chan_state(std::size_t cap, std::uint32_t first = 0)
        : cap_(cap),
          shift_(static_cast<unsigned>(std::countr_zero(std::bit_ceil(cap)))),
          mask_(static_cast<std::uint32_t>(std::bit_ceil(cap) - 1)),
          turn_mask_((std::size_t{2} << (32 - shift_)) - 1),
          slots_(new slot[std::size_t{mask_} + 1]),
          head_(first),
          free_(cap, cap, semaphore::with_tickets, first),
          ready_(0, cap) {
        // Every slot starts free for the lap `first` is in.
        for (std::size_t i = 0; i <= mask_; ++i) {
            const std::uint32_t p = first + static_cast<std::uint32_t>(i);
            slots_[p & mask_].turn.store(full_turn(p) - 1, std::memory_order_relaxed);
        }
    }
    ~chan_state() {
        // Values nobody received are destroyed with the channel.
        for (std::uint32_t p = static_cast<std::uint32_t>(head_.load(std::memory_order_relaxed)),
                           e = free_.next_ticket();
             p != e; ++p) {
            slot& s = slots_[p & mask_];
            if (s.turn.load(std::memory_order_acquire) == full_turn(p)) s.value()->~T();
        }
    }

    // Called with a free-slot permit in hand and the ticket taken with it.
    void push(T&& v, std::uint32_t p) noexcept(std::is_nothrow_move_constructible_v<T>) {
        slot& s = slots_[p & mask_];
        wait_turn(s, full_turn(p) - 1);
        ::new (s.storage) T(std::move(v));
        s.turn.store(full_turn(p), std::memory_order_release);  // the value is complete
    }
    // Called with a ready-value permit in hand.
    T pop() noexcept(std::is_nothrow_move_constructible_v<T>) {
        const auto p = static_cast<std::uint32_t>(head_.fetch_add(1, std::memory_order_relaxed));
        slot& s = slots_[p & mask_];
        wait_turn(s, full_turn(p));
        T v(std::move(*s.value()));
        s.value()->~T();
        // the slot is free again, for the next lap (the first one after the last)
        s.turn.store((full_turn(p) + 1) & turn_mask_, std::memory_order_release);
        return v;
    }

    std::size_t capacity() const noexcept { return cap_; }
    std::size_t len() const noexcept { return ready_.available(); }
    semaphore& free_slots() noexcept { return free_; }
    semaphore& ready_values() noexcept { return ready_; }

    detail::atomic<std::size_t> senders{0}, receivers{0};
    // Where the senders live (the lost-task analysis; sender keeps its entry current).
    detail::holder_list sender_places;
    // The lost-task analysis's facts for a receive waiting on this channel (wait_point): only
    // a sender can end it, and every sender is listed; with none left the close is about to
    // wake it, and nothing is claimed.
    static void recv_facts(const void* self, wait_point& out) {
        const auto* s = static_cast<const chan_state*>(self);
        if (s->senders.load(std::memory_order_acquire) == 0) return;
        s->sender_places.for_each([&](const void* at) { out.ended_by_handles.push_back(at); });
        out.provable = !out.ended_by_handles.empty();
    }
#if BLITZ_FAULTS
    bool fault_drop_waiting_send = false;  // X5's negative controls
    bool fault_drop_closed_send = false;
#endif

private:
    struct slot {
        detail::atomic<std::size_t> turn{0};
        alignas(T) unsigned char storage[sizeof(T)];
        T* value() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
    };
    static void wait_turn(slot& s, std::size_t want) noexcept {
        // acquire: pairs with the release of the previous occupant's hand-over
        // (spin_pause is a scheduling point under the model checker: the writer being waited
        // for gets to run.)
        for (unsigned spins = 0; s.turn.load(std::memory_order_acquire) != want; ++spins) {
            if (spins > 64) {
                std::this_thread::yield();
            } else {
                detail::spin_pause();
            }
        }
    }

    // The turn at which position p's slot holds p's value (one less: free for p's writer).
    std::size_t full_turn(std::uint32_t p) const noexcept {
        return (std::size_t{p >> shift_} << 1) + 1;
    }

    const std::size_t cap_;
    const unsigned shift_;         // log2 of the ring's size
    const std::uint32_t mask_;     // the ring's size - 1
    const std::size_t turn_mask_;  // turns count modulo 2 * laps (2^(33 - shift_))
    std::unique_ptr<slot[]> slots_;
    alignas(64) detail::atomic<std::size_t> head_;  // readers' positions (the low 32 bits)
    alignas(64) semaphore free_;  // free slots, FIFO among waiting senders; writers' tickets
    semaphore ready_;             // values ready, FIFO among waiting receivers
};

}  // namespace detail

// What a send did: delivered, or handed the value back because every receiver is gone (or, for
// try_send, because the channel was full).
template <class T>
class [[nodiscard]] send_result {
public:
    enum class status { sent, closed, full };
    static send_result ok() { return send_result(status::sent, std::nullopt); }
    static send_result back(status s, T v) { return send_result(s, std::move(v)); }

    bool sent() const noexcept { return st_ == status::sent; }
    bool closed() const noexcept { return st_ == status::closed; }
    bool full() const noexcept { return st_ == status::full; }
    explicit operator bool() const noexcept { return sent(); }
    // The value that was not sent (closed or full).
    T take_back() {
        if (!v_) throw std::logic_error("blitz::send_result: the value was sent");
        return std::move(*std::exchange(v_, std::nullopt));
    }

private:
    send_result(status s, std::optional<T> v) : st_(s), v_(std::move(v)) {}
    status st_;
    std::optional<T> v_;
};

template <class T>
class sender;
template <class T>
class receiver;
template <class T>
std::pair<sender<T>, receiver<T>> channel(std::size_t capacity);

// The sending half. Copies count as senders; when the last one goes, the channel closes:
// receivers take what is left, then see the end.
template <class T>
class sender : private detail::holder_link {
public:
    sender(const sender& o) noexcept : s_(o.s_) {
        if (s_) {
            s_->senders.fetch_add(1, std::memory_order_relaxed);
            s_->sender_places.add(this);
        }
    }
    sender(sender&& o) noexcept : s_(std::move(o.s_)) {
        if (s_) s_->sender_places.replace(&o, this);
    }
    sender& operator=(sender o) noexcept {
        drop();
        s_ = std::move(o.s_);
        if (s_) s_->sender_places.replace(&o, this);
        return *this;
    }
    ~sender() { drop(); }

    class [[nodiscard]] send_awaiter {
    public:
        send_awaiter(detail::chan_state<T>& s, T v)
            : s_(s), v_(std::move(v)), a_(s.free_slots().acquire(1)) {
            a_.set_label("channel send", &s);
        }
        bool await_ready() noexcept {
            if (s_.receivers.load(std::memory_order_acquire) == 0) {
                closed_ = true;
                return true;
            }
            ready_first_ = a_.await_ready();
            return ready_first_;
        }
        bool await_suspend(std::coroutine_handle<> h) { return a_.await_suspend(h); }
        send_result<T> await_resume() {
            if (closed_) return send_result<T>::back(send_result<T>::status::closed, std::move(v_));
            semaphore_permit p = a_.await_resume();
            if (a_.closed()) {
                if (BLITZ_FAULT(s_.fault_drop_closed_send)) return send_result<T>::ok();
                return send_result<T>::back(send_result<T>::status::closed, std::move(v_));
            }
            if (BLITZ_FAULT(s_.fault_drop_waiting_send) && !ready_first_) {
                return send_result<T>::ok();  // the control: the slot goes back, the value is lost
            }
            p.forget();  // the slot now belongs to the value
            s_.push(std::move(v_), s_.free_slots().take_ticket());
            s_.ready_values().release(1);
            return send_result<T>::ok();
        }

    private:
        detail::chan_state<T>& s_;
        T v_;
        semaphore::acquire_awaiter a_;
        bool closed_ = false;
        bool ready_first_ = false;  // the slot was free at once (the send did not wait)
    };

    // co_await tx.send(v) -> send_result<T>: waits while the channel is full; completes once
    // the value is in the channel (X5), or hands it back if every receiver is gone.
    send_awaiter send(T v) { return send_awaiter(checked(), std::move(v)); }

    send_result<T> try_send(T v) {
        checked();
        if (s_->receivers.load(std::memory_order_acquire) == 0) {
            return send_result<T>::back(send_result<T>::status::closed, std::move(v));
        }
        std::uint32_t pos;  // the slot and its position in one step
        if (!s_->free_slots().try_acquire_ticket(pos)) {
            return send_result<T>::back(send_result<T>::status::full, std::move(v));
        }
        s_->push(std::move(v), pos);
        s_->ready_values().release(1);
        return send_result<T>::ok();
    }

    bool is_closed() const { return checked().receivers.load(std::memory_order_acquire) == 0; }
    std::size_t capacity() const { return checked().capacity(); }
    std::size_t len() const { return checked().len(); }

private:
#if BLITZ_FAULTS
    friend struct testing::access;
#endif
    friend std::pair<sender<T>, receiver<T>> channel<T>(std::size_t);
    explicit sender(std::shared_ptr<detail::chan_state<T>> s) noexcept : s_(std::move(s)) {
        s_->senders.fetch_add(1, std::memory_order_relaxed);
        s_->sender_places.add(this);
    }
    // Every use of a moved-from sender throws std::logic_error (instead of dereferencing null).
    detail::chan_state<T>& checked() const {
        if (!s_) throw std::logic_error("blitz::sender: used after being moved from");
        return *s_;
    }
    void drop() noexcept {
        if (!s_) return;
        s_->sender_places.remove(this);
        if (s_->senders.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            s_->ready_values().close();  // receivers drain, then see the end
        }
        s_.reset();
    }
    std::shared_ptr<detail::chan_state<T>> s_;
};

// The receiving half. Copies count as receivers (MPMC: each value goes to one of them); when the
// last one goes, waiting and later sends hand their values back.
template <class T>
class receiver {
public:
    receiver(const receiver& o) noexcept : s_(o.s_) {
        if (s_) s_->receivers.fetch_add(1, std::memory_order_relaxed);
    }
    receiver(receiver&& o) noexcept = default;
    receiver& operator=(receiver o) noexcept {
        std::swap(s_, o.s_);
        return *this;
    }
    ~receiver() { drop(); }

    class [[nodiscard]] recv_awaiter {
    public:
        explicit recv_awaiter(detail::chan_state<T>& s) : s_(s), a_(s.ready_values().acquire(1)) {
            a_.set_label("channel recv", &s, &detail::chan_state<T>::recv_facts);
        }
        bool await_ready() noexcept { return a_.await_ready(); }
        bool await_suspend(std::coroutine_handle<> h) { return a_.await_suspend(h); }
        // The next value, or nullopt once the channel is closed and drained.
        std::optional<T> await_resume() {
            semaphore_permit p = a_.await_resume();
            if (a_.closed()) return std::nullopt;
            p.forget();
            std::optional<T> v(s_.pop());
            s_.free_slots().release(1);
            return v;
        }

    private:
        detail::chan_state<T>& s_;
        semaphore::acquire_awaiter a_;
    };

    // co_await rx.recv() -> std::optional<T>: the next value; nullopt when every sender is gone
    // and nothing is left.
    recv_awaiter recv() { return recv_awaiter(checked()); }

    enum class try_status { value, empty, closed };
    // The next value if one is ready; otherwise says whether the channel is merely empty or
    // closed and drained.
    std::optional<T> try_recv(try_status* st = nullptr) {
        semaphore& ready = checked().ready_values();
        auto p = ready.try_acquire(1);
        // A value sent before the last sender left may have landed after the failed take.
        if (!p && ready.is_closed()) p = ready.try_acquire(1);
        if (p) {
            p->forget();
            std::optional<T> v(s_->pop());
            s_->free_slots().release(1);
            if (st) *st = try_status::value;
            return v;
        }
        // Closed only once nothing can come back (a value granted to a receiver that is being
        // cancelled returns to the channel).
        if (st) *st = ready.is_closed_and_drained() ? try_status::closed : try_status::empty;
        return std::nullopt;
    }

    bool is_closed() const { return checked().ready_values().is_closed(); }
    std::size_t len() const { return checked().len(); }

private:
#if BLITZ_FAULTS
    friend struct testing::access;
#endif
    friend std::pair<sender<T>, receiver<T>> channel<T>(std::size_t);
    explicit receiver(std::shared_ptr<detail::chan_state<T>> s) noexcept : s_(std::move(s)) {
        s_->receivers.fetch_add(1, std::memory_order_relaxed);
    }
    detail::chan_state<T>& checked() const {
        if (!s_) throw std::logic_error("blitz::receiver: used after being moved from");
        return *s_;
    }
    void drop() noexcept {
        if (s_ && s_->receivers.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            s_->free_slots().close();  // waiting senders get their values back
        }
        s_.reset();
    }
    std::shared_ptr<detail::chan_state<T>> s_;
};

// A bounded MPMC channel holding up to `capacity` values (1 to 2^30; otherwise
// std::invalid_argument). One allocation for the channel state and one for its ring of
// bit_ceil(capacity) slots; none per send or receive.
template <class T>
std::pair<sender<T>, receiver<T>> channel(std::size_t capacity) {
    if (capacity == 0) {
        throw std::invalid_argument("blitz::channel: capacity must be at least 1");
    }
    if (capacity > detail::chan_state<T>::max_capacity) {
        throw std::invalid_argument("blitz::channel: capacity " + std::to_string(capacity) +
                                    " is above the maximum of " +
                                    std::to_string(detail::chan_state<T>::max_capacity));
    }
    if (BLITZ_INJECTED_FAILURE(channel_alloc)) throw std::bad_alloc();  // faults build only
    auto s = std::make_shared<detail::chan_state<T>>(capacity);
    return {sender<T>(s), receiver<T>(s)};
}

}  // namespace blitz
