// SPDX-License-Identifier: MIT
#pragma once
// The atomic facade (blitz/detail/atomic.hpp, public because the task header and the sync
// primitives' headers use it) and the cache-line size the lock-free cores pad to.

#include "blitz/detail/atomic.hpp"

namespace blitz::detail {
// Destructive-interference distance used to keep producer and consumer fields apart: 128 bytes,
// because x86-64's adjacent-line prefetcher pulls cache lines in pairs.
inline constexpr unsigned cache_line = 128;
}  // namespace blitz::detail
