// SPDX-License-Identifier: MIT
#pragma once
// The one place every lock-free word of the runtime takes its atomics from: the task state word,
// ring indices, the idle state, parkers, semaphore permits, channel turns, oneshot flags. A
// model-checking build defines BLITZ_MODEL_ATOMIC_HEADER to swap in an instrumented atomic with
// the same interface (stress/model/facade.hpp), together with the futex, the monotonic clock
// the parker times out by, and the mutex (blitz/detail/mutex.hpp), and so drives all of them
// under the model checker.
//
// spin_pause() is one step of a spin-wait (the CPU's pause; a scheduling point in the model).
//
// BLITZ_ORDER(site, order) marks a memory order that a model's negative control weakens: it is
// `order` in every build but the model build, where the control named `site` makes it relaxed
// to show that the model notices. BLITZ_MODEL_DEFECT(site) marks a step such a control leaves
// out: false in every build but the model build, where the control named `site` makes it true.

#ifdef BLITZ_MODEL_ATOMIC_HEADER
#include BLITZ_MODEL_ATOMIC_HEADER
#else
#include <atomic>
namespace blitz::detail {
template <class T>
using atomic = std::atomic<T>;
}  // namespace blitz::detail
#define BLITZ_ORDER(site, order) (order)
#define BLITZ_MODEL_DEFECT(site) false
namespace blitz::detail {
// One step of a spin-wait: the CPU's pause hint (a scheduling point under the model checker).
inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}
}  // namespace blitz::detail
#endif
