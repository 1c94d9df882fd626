// SPDX-License-Identifier: MIT
#include "sched/parker.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "blitz/detail/faults.hpp"

namespace blitz::detail {

// The futex and the clock the parker sleeps by. The model build's facade
// (stress/model/facade.hpp) defines its own: a futex that blocks a fiber, and virtual time.
#ifndef BLITZ_MODEL_ATOMIC_HEADER
namespace {

void futex_wait(atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::nanoseconds timeout) noexcept {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
    syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futex_wake_one(atomic<std::uint32_t>& word) noexcept {
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

std::chrono::nanoseconds monotonic_now() noexcept {
    return std::chrono::steady_clock::now().time_since_epoch();
}

}  // namespace
#endif

bool parker::try_consume() noexcept {
    // acquire: pairs with the release exchange in unpark()
    return word_.exchange(empty, std::memory_order_acquire) == notified;
}

bool parker::park(std::chrono::nanoseconds timeout) noexcept {
    std::uint32_t expected = empty;
    // acquire on failure: the token's writes become visible before we return
    if (!word_.compare_exchange_strong(expected, parked, std::memory_order_acquire,
                                       std::memory_order_acquire)) {
        return try_consume();  // a token was waiting
    }
    const auto deadline = monotonic_now() + timeout;
    for (;;) {
        const auto left = deadline - monotonic_now();
        if (left <= std::chrono::nanoseconds::zero()) break;
        futex_wait(word_, parked, left);
        // acquire: see the unparker's writes if it was a real wake
        if (word_.load(std::memory_order_acquire) == notified) break;
        // Spurious return (signal, or value changed and changed back): keep waiting.
    }
    return try_consume();
}

parker::sleeper parker::unpark() noexcept {
    // release: publish everything before the wake to the parked thread
    // (the model's parker_unpark control weakens it)
    const std::uint32_t prev =
        word_.exchange(notified, BLITZ_ORDER(parker_unpark, std::memory_order_release));
    if (prev == parked && !BLITZ_FAULT(fault_skip_wake_)) futex_wake_one(word_);
    return prev == in_driver ? sleeper::driver
           : prev == in_ring ? sleeper::ring
                             : sleeper::elsewhere;
}

bool parker::enter(std::uint32_t where) noexcept {
    std::uint32_t expected = empty;
    // acquire on failure: the token's writes become visible
    if (word_.compare_exchange_strong(expected, where, std::memory_order_acquire,
                                      std::memory_order_acquire)) {
        return true;
    }
    try_consume();
    return false;
}

bool parker::leave_driver() noexcept { return try_consume(); }

}  // namespace blitz::detail
