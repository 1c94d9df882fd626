// SPDX-License-Identifier: MIT
#include "sched/parker.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "blitz/detail/faults.hpp"

namespace blitz::detail {
namespace {

void futex_wait(void* addr, std::uint32_t expected, std::chrono::nanoseconds timeout) noexcept {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futex_wake_one(void* addr) noexcept {
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace

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
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + timeout;
    for (;;) {
        auto left = deadline - clock::now();
        if (left <= std::chrono::nanoseconds::zero()) break;
        futex_wait(&word_, parked, std::chrono::duration_cast<std::chrono::nanoseconds>(left));
        // acquire: see the unparker's writes if it was a real wake
        if (word_.load(std::memory_order_acquire) == notified) break;
        // Spurious return (signal, or value changed and changed back): keep waiting.
    }
    return try_consume();
}

bool parker::unpark() noexcept {
    // release: publish everything before the wake to the parked thread
    const std::uint32_t prev = word_.exchange(notified, std::memory_order_release);
    if (prev == parked && !BLITZ_FAULT(fault_skip_wake_)) futex_wake_one(&word_);
    return prev == in_driver;
}

bool parker::enter_driver() noexcept {
    std::uint32_t expected = empty;
    // acquire on failure: the token's writes become visible
    if (word_.compare_exchange_strong(expected, in_driver, std::memory_order_acquire,
                                      std::memory_order_acquire)) {
        return true;
    }
    try_consume();
    return false;
}

bool parker::leave_driver() noexcept { return try_consume(); }

}  // namespace blitz::detail
