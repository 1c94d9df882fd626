#pragma once
// `blitz bench`: benchmarks that print tables. For now: timer accuracy and timer cost; the
// benchmark issue adds the scheduler workloads and the peers.

#include "blitz/config.hpp"

namespace blitz::cli {

struct bench_options {
    topology_options topology;  // placement (--policy, --topology, ...)
    unsigned workers = 0;   // 0: hardware threads
    unsigned samples = 200; // sleeps per scenario
};

int run_bench(const bench_options& o);

}  // namespace blitz::cli
