// SPDX-License-Identifier: MIT
#pragma once
// What the per-thread cache of task blocks (task_header.cpp) holds, for tests and reports.

#include <cstddef>
#include <cstdint>

namespace blitz::detail::block_cache_info {

// false under AddressSanitizer, where every block goes back to the heap.
bool enabled() noexcept;
// The size of the block cached_alloc(bytes) returns (its class's, with the home's stamp).
std::size_t block_size(std::size_t bytes) noexcept;
// Blocks of the size class that holds `bytes` which the calling thread's cache keeps.
std::size_t held(std::size_t bytes) noexcept;
// Blocks of one class every thread may keep (its base).
std::size_t base_per_class() noexcept;
// Bytes that threads which are not workers may keep beyond their bases, all together.
std::size_t wide_budget() noexcept;
// Bytes they keep beyond their bases now (at most wide_budget()).
std::size_t wide_charged() noexcept;

// Blocks sent to their homes (task/home_stack.hpp), taken back by the homes' owners, and refused
// because the home had closed (those went to the heap), since the process started.
struct home_counts {
    std::uint64_t sent = 0, taken = 0, refused = 0;
};
home_counts homes() noexcept;
// The home stamped in a block cached_alloc(bytes) returned (0: none).
std::uint16_t home_of(void* block, std::size_t bytes) noexcept;
// The calling thread's home (0: none), claimed now if it had none yet.
std::uint16_t my_home() noexcept;

}  // namespace blitz::detail::block_cache_info
