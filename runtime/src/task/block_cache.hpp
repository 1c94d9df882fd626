// SPDX-License-Identifier: MIT
#pragma once
// The per-thread cache of task blocks (task_header.cpp): what the scheduler calls into.

namespace blitz::detail {

// The calling thread goes idle: pushes the blocks it batched for other threads' homes and takes
// back what others returned to its own (task/home_stack.hpp), so neither waits for its next spawn.
void block_cache_idle() noexcept;

}  // namespace blitz::detail
