// SPDX-License-Identifier: MIT
#pragma once
// Negative controls: deliberate defects the conformance suite injects to prove that its
// checkers can fail. They exist only in the faults build of the runtime (target
// blitz::runtime_faults, which defines BLITZ_FAULTS=1 for itself and its users: the blitz
// binary's conformance suite, the stress tests and the unit tests). In the library users link
// (blitz::runtime) every fault switch and the branch it guards compile away.

#ifndef BLITZ_FAULTS
#define BLITZ_FAULTS 0
#endif

// BLITZ_FAULT(x): the fault switch `x` in a faults build; the constant false otherwise (and `x`
// is not compiled, so it may name members that only the faults build has).
#if BLITZ_FAULTS
#define BLITZ_FAULT(x) (x)
#else
#define BLITZ_FAULT(x) false
#endif

namespace blitz::testing {
// Befriended by every type that carries a fault switch (faults build only); blitz/testing.hpp
// sets the switches through it.
struct access;
}  // namespace blitz::testing
