// SPDX-License-Identifier: MIT
#pragma once
// The operating-system side of placement (used by topo/ and the blocking pool): thread affinity
// (sched_setaffinity and sched_getaffinity on the calling thread) and NUMA memory (libnuma).

#include <cstddef>
#include <string>
#include <vector>

namespace blitz::detail::os {

// Binds the calling thread to the CPU with OS index `cpu`. Returns an empty string, or the
// reason it failed (strerror text).
std::string bind_this_thread(unsigned cpu);
// Restores the calling thread's affinity to `cpus` (e.g. a thread started from a pinned worker
// that must not inherit its single PU). Returns "" or the reason.
std::string set_this_thread_cpus(const std::vector<unsigned>& cpus);
// The calling thread's CPU set as the kernel reports it (sorted OS indexes).
std::vector<unsigned> this_thread_cpus();
// The CPU the calling thread is running on right now, or -1.
int current_cpu() noexcept;

// NUMA nodes the kernel has configured (1 without NUMA support). Checked before any node
// request: libnuma accepts a request for a node that does not exist and places the pages
// elsewhere with only a warning.
int kernel_numa_nodes() noexcept;
// `bytes` of zeroed memory bound to kernel node `node` (pages touched, so they are placed
// now), or nullptr. Free with free_on_node.
void* alloc_on_node(std::size_t bytes, int node) noexcept;
void free_on_node(void* p, std::size_t bytes) noexcept;
// The kernel node holding the page at `p` (which must be touched), or -1 when unknown.
int node_of(const void* p) noexcept;

}  // namespace blitz::detail::os
