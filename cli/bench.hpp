// SPDX-License-Identifier: MIT
#pragma once
// `blitz bench`: the benchmark report (issue 7). Runs blitz's workloads (bench/common/) and the
// same workloads in each peer (bench/peers/), interleaved repetition by repetition, and writes
// results/<machine>/bench.{md,json} with the plots.

#include <string>
#include <vector>

#include "blitz/config.hpp"
#include "options.hpp"

namespace blitz::cli {

using bench::bench_options;

// Parses `blitz bench ...` (argv[0] = "bench") and runs the report.
int bench_main(int argc, char** argv);
int run_bench(const bench_options& o);

}  // namespace blitz::cli
