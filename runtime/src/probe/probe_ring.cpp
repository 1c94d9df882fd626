// SPDX-License-Identifier: MIT
#include "probe/probe_ring.hpp"

#include <bit>
#include <stdexcept>

namespace blitz::detail {

probe_ring::probe_ring(std::uint32_t capacity_pow2)
    : capacity_(std::bit_ceil(std::max<std::uint32_t>(capacity_pow2, 2))),
      mask_(capacity_ - 1),
      buf_(new probe_event[capacity_]) {}

std::size_t probe_ring::take(std::vector<probe_event>& out) {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);  // relaxed: we write it
    const std::uint64_t h = head_.load(std::memory_order_acquire);  // acquire: see the slots
    for (std::uint64_t i = t; i < h; ++i) out.push_back(buf_[i & mask_]);
    tail_.store(h, std::memory_order_release);  // release: the slots may be reused
    return static_cast<std::size_t>(h - t);
}

}  // namespace blitz::detail
