// SPDX-License-Identifier: MIT
#pragma once
// Heap allocation counting for the benchmarks: a replacement of the global operator new (in
// alloc_count.cpp) that counts every allocation made by the calling thread, and, while switched
// on, every allocation and byte made by the whole process. The process-wide count is off by
// default so that timed repetitions never pay for a shared counter; the report runs one extra
// counted repetition per workload instead.

#include <cstdint>

namespace blitz::bench {

struct alloc_totals {
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;
};

// Switches the process-wide count on or off (it keeps its value while off).
void count_allocations(bool on) noexcept;
// Allocations and bytes counted process-wide while the count was on.
alloc_totals allocations() noexcept;
// Every allocation the calling thread has made (always counted; a plain thread-local).
std::uint64_t allocations_this_thread() noexcept;

}  // namespace blitz::bench
