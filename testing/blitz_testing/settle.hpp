// SPDX-License-Identifier: MIT
#pragma once
// settle(): wait until a runtime is quiescent (every worker parked, nobody searching) and return
// its metrics. Counters that two sides update at different moments (a claim and the claimed
// worker's wake, say) agree only at quiescence, so checks that compare them read them here.

#include <chrono>
#include <thread>

#include "blitz/runtime.hpp"

namespace blitz::workloads {

// Polls the metrics up to `attempts` times (bounded by count, not by a time verdict); returns the
// last snapshot, quiescent or not, for the caller to check.
inline runtime_metrics settle(const runtime& rt, int attempts = 100'000) {
    runtime_metrics m;
    for (int i = 0; i < attempts; ++i) {
        m = rt.metrics();
        if (m.num_parked == rt.num_workers() && m.num_searching == 0) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return m;
}

}  // namespace blitz::workloads
