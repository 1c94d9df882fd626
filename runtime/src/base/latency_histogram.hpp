// SPDX-License-Identifier: MIT
#pragma once
// latency_histogram: a worker's fixed-size, log-bucketed histogram (issue 46), written by its
// owner and read by anyone (blitz::latency_histogram_data describes the buckets).

#include <cstdint>

#include "base/atomic.hpp"
#include "blitz/metrics.hpp"

namespace blitz::detail {

// Invariants: counts only grow; bucket_of places a value in the bucket whose bounds hold it.
// Memory ordering: relaxed; a reader gets a recent count of each bucket, not one instant's
// counts of all of them (as with the workers' other counters).
// Thread-safety: record() by one writer (the owning worker); read() from any thread.
class latency_histogram {
public:
    using data = latency_histogram_data;
    void record(std::uint64_t ns) noexcept {
        auto& c = counts_[data::bucket_of(ns)];
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    data read() const {
        data d;
        d.counts.resize(data::buckets);
        for (unsigned b = 0; b < data::buckets; ++b)
            d.counts[b] = counts_[b].load(std::memory_order_relaxed);
        return d;
    }

private:
    atomic<std::uint64_t> counts_[data::buckets] = {};
};

}  // namespace blitz::detail
