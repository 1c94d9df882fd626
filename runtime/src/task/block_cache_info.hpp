// SPDX-License-Identifier: MIT
#pragma once
// What the per-thread cache of task blocks (task_header.cpp) holds, for tests and reports.

#include <cstddef>

namespace blitz::detail::block_cache_info {

// false under AddressSanitizer, where every block goes back to the heap.
bool enabled() noexcept;
// Blocks of the size class that holds `bytes` which the calling thread's cache keeps.
std::size_t held(std::size_t bytes) noexcept;
// Blocks of one class every thread may keep (its base).
std::size_t base_per_class() noexcept;
// Bytes that threads which are not workers may keep beyond their bases, all together.
std::size_t wide_budget() noexcept;
// Bytes they keep beyond their bases now (at most wide_budget()).
std::size_t wide_charged() noexcept;

}  // namespace blitz::detail::block_cache_info
