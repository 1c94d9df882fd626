// SPDX-License-Identifier: MIT
#pragma once
// Process-wide counters of task allocations (K3 checks and the demo's bytes-per-task figure),
// kept per thread so that counting costs no shared-cache-line traffic on the spawn path.

#include <atomic>
#include <cstdint>

#include "blitz/detail/atomic.hpp"

namespace blitz::detail::alloc_stats {

// One thread's counters. Written only by that thread (relaxed load + store, no RMW); summed by
// read() while enlisted. Whoever owns a set enlists it before its first count and retires it
// (its counts folded into the retired totals) before it goes away.
struct counters {
    detail::atomic<std::uint64_t> allocs{0};
    detail::atomic<std::uint64_t> bytes{0};
    detail::atomic<std::uint64_t> frees{0};
    counters* next = nullptr;  // guarded by the registry's mutex (alloc_stats.cpp)
    counters* prev = nullptr;
};
void enlist(counters& c);
void retire(counters& c);

// The counters of a thread whose task-block cache cannot count (task_header.cpp): enlisted when
// the thread first uses them, retired when it exits.
struct block : counters {
    block() { enlist(*this); }
    ~block() { retire(*this); }
    block(const block&) = delete;
    block& operator=(const block&) = delete;
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
inline void on_alloc(counters& c, std::uint64_t bytes) noexcept {
    bump(c.allocs, 1);
    bump(c.bytes, bytes);
}
inline void on_free(counters& c) noexcept { bump(c.frees, 1); }

}  // namespace blitz::detail::alloc_stats
