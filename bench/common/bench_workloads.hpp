// SPDX-License-Identifier: MIT
#pragma once
// blitz's side of the benchmark workloads (issue 7): one definition of each workload, used by the
// Google Benchmark suite (bench/sched_bench.cpp) and by the report's runner (`blitz bench`, via
// bench/common/runner.cpp). The peers in bench/peers/ implement the same names and definitions;
// bench/peers/README.md lists them.

#include <functional>
#include <string>
#include <vector>

#include "blitz/runtime.hpp"

namespace blitz::bench {

// One timed repetition. `ns` is the wall time of the measured part (set-up such as starting
// background tasks or pre-filling a channel is excluded). Latency workloads also return every
// sample; their `ns` is the median sample.
struct rep {
    double ns = 0;
    std::vector<double> samples_ns;
};

enum class kind { scheduler, forkjoin, primitive, timer, latency };

struct workload {
    std::string name;
    kind group;
    long ops;  // tasks or operations per repetition (1 for latency workloads: ns is per sample)
    std::function<rep(runtime&)> run;
    // The same row on a current-thread runtime (issue 47's column), for the rows where Tokio's
    // benchmarks use one; empty elsewhere (the row is not run there).
    std::function<rep(runtime&)> run_current_thread = {};
};

// Every workload, in report order.
const std::vector<workload>& workloads();
const char* kind_name(kind k) noexcept;
// Smoke sizes: about a hundredth of every workload (completion, not speed: `blitz bench
// --smoke`, which must finish in seconds under ThreadSanitizer). Before the first run; the
// `ops` of each entry keep the report's sizes.
void set_smoke(bool on) noexcept;

}  // namespace blitz::bench
