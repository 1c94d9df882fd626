// SPDX-License-Identifier: MIT
#pragma once
// probe_ring: one worker's fixed-size, single-producer, single-consumer ring of probe events.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/probe.hpp"

// BLITZ_PROBES=0 compiles every probe site out; the default keeps them in, switched at run time
// by config::probes (one predictable branch per site when off).
#ifndef BLITZ_PROBES
#define BLITZ_PROBES 1
#endif

namespace blitz::detail {

// Protocol: the owner worker writes slot[head % capacity] and publishes head+1 (release); a
// reader copies [tail, head) and publishes its new tail (release). When the ring is full new
// events are dropped and counted, never overwriting unread ones.
//
// Invariants: tail <= head <= tail + capacity; every event is either read once or counted as
// dropped.
// Memory ordering: head_ release/acquire publishes the slots; tail_ release/acquire frees them.
// Thread-safety: emit() on the owner thread only; take() from one reader at a time.
class probe_ring {
public:
    explicit probe_ring(std::uint32_t capacity_pow2);

    void emit(const probe_event& e) noexcept {
        const std::uint64_t h = head_.load(std::memory_order_relaxed);  // relaxed: we write it
        // acquire: the reader has finished with the slot we are about to reuse
        if (h - tail_.load(std::memory_order_acquire) >= capacity_) {
            dropped_.store(dropped_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);  // relaxed: single writer, a statistic
            return;
        }
        buf_[h & mask_] = e;
        head_.store(h + 1, std::memory_order_release);  // release: publishes the slot
    }

    // Appends every published event to `out`; returns how many.
    std::size_t take(std::vector<probe_event>& out);
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    const std::uint64_t capacity_;
    const std::uint64_t mask_;
    std::unique_ptr<probe_event[]> buf_;
    alignas(cache_line) atomic<std::uint64_t> head_{0};
    alignas(cache_line) atomic<std::uint64_t> tail_{0};
    atomic<std::uint64_t> dropped_{0};
};

}  // namespace blitz::detail
