// SPDX-License-Identifier: MIT
#pragma once
// The one place every lock-free word of the runtime takes its atomics from: the task state word,
// ring indices, the idle state, parkers, semaphore permits, channel turns, oneshot flags. A
// model-checking build defines BLITZ_MODEL_ATOMIC_HEADER to swap in an instrumented atomic with
// the same interface, and so drives all of them.

#ifdef BLITZ_MODEL_ATOMIC_HEADER
#include BLITZ_MODEL_ATOMIC_HEADER
#else
#include <atomic>
namespace blitz::detail {
template <class T>
using atomic = std::atomic<T>;
}  // namespace blitz::detail
#endif
