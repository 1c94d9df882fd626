// SPDX-License-Identifier: MIT
#pragma once
// Stress size: quick by default (what `make test` runs); BLITZ_STRESS_SCALE=N multiplies it.

#include <cstdlib>

namespace blitz::stress {
inline unsigned long scale() {
    const char* s = std::getenv("BLITZ_STRESS_SCALE");
    unsigned long v = s ? std::strtoul(s, nullptr, 10) : 1;
    return v == 0 ? 1 : v;
}
}  // namespace blitz::stress
