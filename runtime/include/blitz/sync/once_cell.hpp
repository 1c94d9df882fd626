// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::once_cell: a value initialized once, by the first caller, possibly asynchronously (X4).

#include <atomic>
#include <optional>
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
        return set_.load(std::memory_order_acquire) ? &*value_ : nullptr;  // pairs with publish
    }
    bool initialized() const noexcept { return get() != nullptr; }

    template <class F>
    task<const T*> get_or_init(F f) {
        if (const T* v = get()) co_return v;
        auto guard = co_await lock_.lock();
        if (const T* v = get()) co_return v;
        if constexpr (detail::is_task<std::invoke_result_t<F&>>::value) {
            T v = co_await f();
            value_.emplace(std::move(v));
        } else {
            value_.emplace(f());
        }
        ++inits_;
        set_.store(true, std::memory_order_release);  // publish: the value is complete
        co_return &*value_;
    }

    // Sets the value if nobody has and nobody is initializing; returns whether it did.
    bool set(T v) {
        auto g = lock_.try_lock();
        if (!g || get()) return false;
        value_.emplace(std::move(v));
        ++inits_;
        set_.store(true, std::memory_order_release);
        return true;
    }
    // How many initializers completed (1 once set; tests use it to prove "exactly once").
    unsigned initializations() const noexcept { return inits_; }

private:
    detail::atomic<bool> set_{false};
    std::optional<T> value_;  // written once under lock_, before set_
    unsigned inits_ = 0;      // under lock_
    mutex lock_;
};

}  // namespace blitz
