#pragma once
// Process-wide counters of task allocations (K3 checks and the demo's bytes-per-task figure).

#include <atomic>
#include <cstdint>

namespace blitz::detail::alloc_stats {

struct counters {
    alignas(128) std::atomic<std::uint64_t> allocs{0};
    std::atomic<std::uint64_t> bytes{0};
    alignas(128) std::atomic<std::uint64_t> frees{0};
};
counters& get() noexcept;

// relaxed: statistics only; no other memory depends on them
inline void on_alloc(std::uint64_t bytes) noexcept {
    get().allocs.fetch_add(1, std::memory_order_relaxed);
    get().bytes.fetch_add(bytes, std::memory_order_relaxed);
}
inline void on_free() noexcept { get().frees.fetch_add(1, std::memory_order_relaxed); }

}  // namespace blitz::detail::alloc_stats
