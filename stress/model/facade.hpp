// SPDX-License-Identifier: MIT
#pragma once
// The model build's side of the atomic facade (blitz/detail/atomic.hpp includes this file when
// BLITZ_MODEL_ATOMIC_HEADER names it): the runtime's atomics, futex, monotonic clock and mutex
// become blitz::model's, so the cores compiled into a model run under the explorer unchanged.

#include <chrono>
#include <cstdint>

#include "model.hpp"

namespace blitz::detail {

template <class T>
using atomic = ::blitz::model::atomic<T>;
using mutex_impl = ::blitz::model::mutex;

inline void futex_wait(atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::chrono::nanoseconds timeout) noexcept {
    ::blitz::model::impl::futex_wait(word.location(), expected, timeout);
}
inline void futex_wake_one(atomic<std::uint32_t>& word) noexcept {
    ::blitz::model::impl::futex_wake(word.location(), 1);
}
inline std::chrono::nanoseconds monotonic_now() noexcept { return ::blitz::model::now(); }
inline void spin_pause() noexcept { ::blitz::model::yield(); }

}  // namespace blitz::detail

// One memory order the negative controls may weaken to relaxed (see blitz/detail/atomic.hpp).
#define BLITZ_ORDER(site, mo) (::blitz::model::weakened(#site) ? ::std::memory_order_relaxed : (mo))
// One step a negative control leaves out (see blitz/detail/atomic.hpp).
#define BLITZ_MODEL_DEFECT(site) (::blitz::model::weakened(#site))
