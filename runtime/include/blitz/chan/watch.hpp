// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::watch<T>(initial): a versioned latest value; receivers wait for changes (X6).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

#include "blitz/chan/cond_wait.hpp"
#include "blitz/detail/atomic.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {

namespace detail {

// The value a watch holds. A trivially copyable value of at most 64 bytes lives in atomic words
// behind a sequence lock, so receivers read it without a lock (issue 21); any other value lives
// under the channel's mutex.
//
// seq is twice the version, plus one while a lock-free write is in progress. Readers take seq
// (acquire), the words (acquire: a word written by a later write carries that write's odd seq
// with it), then seq again, and retry until both are the same even number. Writers serialize
// on seq itself (even -> odd, then the next even).
template <class T>
inline constexpr bool watch_lock_free = std::is_trivially_copyable_v<T> && sizeof(T) <= 64;

template <class T, bool LockFree = watch_lock_free<T>>
class watch_value;

template <class T>
class watch_value<T, true> {
public:
    explicit watch_value(const T& v) noexcept { store_words(v); }
    void write(const T& v) noexcept {
        std::uint64_t s = seq_.load(std::memory_order_relaxed);
        for (unsigned spins = 0;; ++spins) {
            if (!(s & 1) && seq_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                                       std::memory_order_relaxed)) {
                break;
            }
            detail::spin_pause();                       // another send is mid-write
            if (spins > 64) std::this_thread::yield();  // and was preempted there
            s = seq_.load(std::memory_order_relaxed);
        }
        store_words(v);
        // seq_cst: the new version is visible before the sender reads the waiters' count
        seq_.store(s + 2, std::memory_order_seq_cst);
    }
    // The value and its version.
    std::pair<T, std::uint64_t> read() const noexcept {
        for (unsigned spins = 0;; ++spins) {
            const std::uint64_t s = seq_.load(std::memory_order_acquire);
            if (!(s & 1)) {
                alignas(T) unsigned char bytes[sizeof(T)];
                std::uint64_t w[kWords];
                for (std::size_t i = 0; i < kWords; ++i)
                    w[i] = words_[i].load(std::memory_order_acquire);
                // (the model's watch_read_no_recheck control leaves the second look out)
                if (BLITZ_MODEL_DEFECT(watch_read_no_recheck) ||
                    seq_.load(std::memory_order_relaxed) == s) {
                    std::memcpy(bytes, w, sizeof(T));
                    return {*std::launder(reinterpret_cast<T*>(bytes)), s >> 1};
                }
            }
            detail::spin_pause();
            if (spins > 64) std::this_thread::yield();  // a writer was preempted mid-write
        }
    }
    std::uint64_t version() const noexcept { return seq_.load(std::memory_order_seq_cst) >> 1; }

private:
    static constexpr std::size_t kWords = (sizeof(T) + 7) / 8;
    void store_words(const T& v) noexcept {
        std::uint64_t w[kWords] = {};
        std::memcpy(w, &v, sizeof(T));
        // release: a reader that sees this word also sees the odd seq before it
        for (std::size_t i = 0; i < kWords; ++i) words_[i].store(w[i], std::memory_order_release);
    }
    detail::atomic<std::uint64_t> seq_{0};
    detail::atomic<std::uint64_t> words_[kWords];
};

template <class T>
class watch_value<T, false> {
public:
    explicit watch_value(T v) : value_(std::move(v)) {}
    void write(T v) {
        detail::lock_guard l(mu_);
        value_ = std::move(v);
        // seq_cst: the new version is visible before the sender reads the waiters' count
        seq_.fetch_add(2, std::memory_order_seq_cst);
    }
    std::pair<T, std::uint64_t> read() const {
        detail::lock_guard l(mu_);
        return {value_, seq_.load(std::memory_order_relaxed) >> 1};  // in step under mu_
    }
    std::uint64_t version() const noexcept { return seq_.load(std::memory_order_seq_cst) >> 1; }

private:
    mutable detail::mutex mu_;
    T value_ BLITZ_GUARDED_BY(mu_);
    detail::atomic<std::uint64_t> seq_{0};
};

template <class T>
struct watch_state {
    explicit watch_state(T v) : value(std::move(v)) {}
    watch_value<T> value;
    detail::mutex mu;  // guards the waiters
    wait_queue waiters;
    // Waiters linked in `waiters`: a send that reads 0 (after publishing its version) has
    // nobody to wake and takes no lock (cond_awaiter's counted protocol).
    detail::atomic<std::uint32_t> linked{0};
    detail::atomic<bool> sender_gone{false};
#if BLITZ_FAULTS
    bool fault_skip_last = false;  // X6's negative control: the sender's going wakes nobody
#endif
    // Wakes every linked waiter.
    void wake_waiters() {
        wake_batch b;
        detail::unique_lock l(mu);
        wake_all(waiters, mu, b);
        linked.store(0, std::memory_order_relaxed);  // under mu: every node was unlinked
        l.unlock();
        b.flush();
    }
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

    // The current value and its version; marks it seen. Takes no lock when T is trivially
    // copyable and at most 64 bytes.
    std::pair<T, std::uint64_t> borrow_and_update() {
        auto r = s_->value.read();
        seen_ = r.second;
        return r;
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
            : r_(r), w_(r.s_->mu, r.s_->waiters, ready_pred{&r}, &r.s_->linked) {
            w_.set_label("watch changed", r.s_.get());
        }
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
    friend class watch_sender<T>;  // subscribe()
    explicit watch_receiver(std::shared_ptr<detail::watch_state<T>> s) : s_(std::move(s)) {}
    // seq_cst: against send's publish-then-read-the-count (cond_awaiter's counted protocol)
    bool unseen() const noexcept { return s_->value.version() != seen_; }
    std::shared_ptr<detail::watch_state<T>> s_;
    std::uint64_t seen_ = 0;
};

template <class T>
class watch_sender {
public:
    watch_sender(watch_sender&&) noexcept = default;
    ~watch_sender() {
        if (!s_) return;
        {
            // under mu: a waiter reads it under mu before it links, so it either sees the end
            // or is linked before the wake below
            detail::lock_guard l(s_->mu);
            s_->sender_gone.store(true, std::memory_order_release);
        }
        if (!BLITZ_FAULT(s_->fault_skip_last)) s_->wake_waiters();
    }

    // Replaces the value and wakes every watcher. Without a waiter linked it takes no lock
    // (for a trivially copyable value of at most 64 bytes; others lock the value's mutex).
    // Safe from several threads at once: sends serialize, each is one version.
    void send(T v) {
        s_->value.write(std::move(v));
        // seq_cst: after the version is published (cond_awaiter's counted protocol)
        if (s_->linked.load(std::memory_order_seq_cst) != 0) s_->wake_waiters();
    }
    // A new receiver of this channel. Like Tokio's Sender::subscribe, it counts the current
    // value as seen: changed() waits for the next send (borrow reads the current value).
    watch_receiver<T> subscribe() const {
        watch_receiver<T> r(s_);
        r.seen_ = s_->value.version();
        return r;
    }

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
