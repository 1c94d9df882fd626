// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::once_cell: a value initialized once, by the first caller, possibly asynchronously (X4).

#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "blitz/detail/atomic.hpp"
#include "blitz/sync/mutex.hpp"
#include "blitz/task.hpp"

namespace blitz {

namespace detail {
template <class X>
struct is_task : std::false_type {};
template <class X>
struct is_task<task<X>> : std::true_type {};
}  // namespace detail

// get_or_init(f) runs f (returning T, or task<T> to initialize asynchronously) in the first
// caller only; every caller gets a pointer to the same value. Callers arriving meanwhile wait in
// FIFO order. If f throws, the exception reaches that caller, the cell stays empty and the next
// waiter runs its own initializer. get() never waits and never allocates; get_or_init on an
// initialized cell returns at once (it is a task: one frame allocation per call).
template <class T>
class once_cell {
public:
    once_cell() = default;
    once_cell(const once_cell&) = delete;
    once_cell& operator=(const once_cell&) = delete;

    const T* get() const noexcept {
        // acquire: pairs with the release that published the value
        return state_.load(std::memory_order_acquire) == full ? &*value_ : nullptr;
    }
    bool initialized() const noexcept { return get() != nullptr; }

    template <class F>
    task<const T*> get_or_init(F f) {
        if (const T* v = get()) co_return v;
        auto guard = co_await lock_.lock();  // initializers queue here, FIFO
        for (;;) {
            std::uint8_t s = empty;
            // acquire: a value another thread published; nothing to release yet
            if (state_.compare_exchange_strong(s, busy, std::memory_order_acquire)) break;
            if (s == full) co_return &*value_;
            std::this_thread::yield();  // a set() is writing the value (synchronous, short)
        }
        try {
            if constexpr (detail::is_task<std::invoke_result_t<F&>>::value) {
                T v = co_await f();
                value_.emplace(std::move(v));
            } else {
                value_.emplace(f());
            }
        } catch (...) {
            state_.store(empty, std::memory_order_release);  // the next waiter tries its own
            throw;
        }
        ++inits_;
        state_.store(full, std::memory_order_release);  // publish: the value is complete
        co_return &*value_;
    }

    // Sets the value if nobody has and nobody is initializing; returns whether it did. One CAS
    // and a store: no lock.
    bool set(T v) {
        std::uint8_t s = empty;
        if (!state_.compare_exchange_strong(s, busy, std::memory_order_acquire)) return false;
        try {
            value_.emplace(std::move(v));
        } catch (...) {
            state_.store(empty, std::memory_order_release);  // a throwing move: still empty
            throw;
        }
        ++inits_;
        state_.store(full, std::memory_order_release);
        return true;
    }
    // How many initializers completed (1 once set; tests use it to prove "exactly once").
    unsigned initializations() const noexcept { return inits_; }

private:
    // empty -> busy (one initializer or set() owns value_) -> full (published), or back to
    // empty when the initializer throws.
    static constexpr std::uint8_t empty = 0, busy = 1, full = 2;
    detail::atomic<std::uint8_t> state_{empty};
    std::optional<T> value_;  // written once while busy, before full
    unsigned inits_ = 0;      // written while busy
    mutex lock_;              // queues the get_or_init callers (FIFO)
};

}  // namespace blitz
