// SPDX-License-Identifier: MIT
#pragma once
// The demo workload `blitz demo` runs (and `make run` shows).

#include "blitz/config.hpp"

namespace blitz::cli {

struct demo_options {
    topology_options topology;  // placement (--policy, --topology, ...)
    unsigned workers = 0;       // 0: hardware threads
    unsigned long fanout = 1'000'000;
    unsigned long chain = 100'000;
};

// Runs a fan-out and a spawn chain, prints timings, memory per task and the counters.
// Returns a process exit code (non-zero if a result is wrong).
int run_demo(const demo_options& o);

}  // namespace blitz::cli
