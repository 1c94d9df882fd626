// SPDX-License-Identifier: MIT
#pragma once
// A move-only payload that counts its live instances: sent through channels, selects and aborts,
// a value lost inside the runtime (never destroyed) or destroyed twice shows up as a non-zero
// count once everything is gone. Used by the cancellation stress test and `blitz stress`.

#include <atomic>
#include <cstdint>
#include <utility>

namespace blitz::workloads {

struct counted_payload {
    static inline std::atomic<long> live{0};  // instances that own a value

    std::uint32_t id = 0;
    bool owns = false;
    explicit counted_payload(std::uint32_t i) : id(i), owns(true) { live.fetch_add(1); }
    counted_payload(counted_payload&& o) noexcept : id(o.id), owns(std::exchange(o.owns, false)) {}
    counted_payload& operator=(counted_payload&& o) noexcept {
        if (owns) live.fetch_sub(1);
        id = o.id;
        owns = std::exchange(o.owns, false);
        return *this;
    }
    ~counted_payload() {
        if (owns) live.fetch_sub(1);
    }
};

}  // namespace blitz::workloads
