// SPDX-License-Identifier: MIT
#pragma once
// Process-wide counters of task allocations (K3 checks and the demo's bytes-per-task figure),
// kept per thread so that counting costs no shared-cache-line traffic on the spawn path.

#include <atomic>
#include <cstdint>

#include "blitz/detail/atomic.hpp"

namespace blitz::detail::alloc_stats {

// One thread's counters. Written only by that thread (relaxed load + store, no RMW); summed by
// read(). A thread's block joins a global list when first used and, when the thread exits, folds
// its counts into the retired totals.
struct block {
    detail::atomic<std::uint64_t> allocs{0};
    detail::atomic<std::uint64_t> bytes{0};
    detail::atomic<std::uint64_t> frees{0};
    block* next = nullptr;  // guarded by the list's mutex (alloc_stats.cpp)
    block* prev = nullptr;
    block();
    ~block();
};

struct totals {
    std::uint64_t allocs = 0;
    std::uint64_t bytes = 0;
    std::uint64_t frees = 0;
};
totals read();

inline block& mine() noexcept {
    thread_local block b;
    return b;
}

inline void bump(detail::atomic<std::uint64_t>& c, std::uint64_t n) noexcept {
    // relaxed: single writer; readers want a recent value, nothing is ordered by it
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline void on_alloc(std::uint64_t bytes) noexcept {
    block& b = mine();
    bump(b.allocs, 1);
    bump(b.bytes, bytes);
}
inline void on_free() noexcept { bump(mine().frees, 1); }

}  // namespace blitz::detail::alloc_stats
