// SPDX-License-Identifier: MIT
#pragma once
// The one place lock-free cores take their atomics from. A model-checking build defines
// BLITZ_MODEL_ATOMIC_HEADER to swap in an instrumented atomic with the same interface.

#ifdef BLITZ_MODEL_ATOMIC_HEADER
#include BLITZ_MODEL_ATOMIC_HEADER
#else
#include <atomic>
namespace blitz::detail {
template <class T>
using atomic = std::atomic<T>;
}  // namespace blitz::detail
#endif

namespace blitz::detail {
// Destructive-interference distance used to keep producer and consumer fields apart: 128 bytes,
// because x86-64's adjacent-line prefetcher pulls cache lines in pairs.
inline constexpr unsigned cache_line = 128;
}  // namespace blitz::detail
