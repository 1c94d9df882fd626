// SPDX-License-Identifier: MIT
#pragma once
// `blitz bench`: the benchmark report (issue 7). Runs blitz's workloads (bench/common/) and the
// same workloads in each peer (bench/peers/), interleaved repetition by repetition, and writes
// results/<machine>/bench.{md,json} with the plots.

#include <string>
#include <vector>

#include "blitz/config.hpp"

namespace blitz::cli {

struct bench_options {
    std::string filter;                  // regular expression on workload names; "" = all
    std::vector<std::string> peers;      // implementations besides blitz (known: see peers())
    std::vector<unsigned> workers;       // worker counts; default: 4 and the hardware threads
    topology_options topology;           // placement of blitz's workers (--pin POLICY)
    unsigned repetitions = 5;            // timed repetitions per implementation
    unsigned timeout_s = 60;             // one child process longer than this is killed
    std::string out_dir;                 // default results/<machine-id>; "-" = write nothing
    bool plots = true;
    bool smoke = false;                  // blitz only, once each, no warm-up, nothing written
    bool quick = false;                  // make run's pass: written to results/<machine>/quick/
    std::string command;                 // the command line, recorded in the report
};

// Parses `blitz bench ...` (argv[0] = "bench") and runs the report.
int bench_main(int argc, char** argv);
int run_bench(const bench_options& o);

// Every peer `--peers` accepts, in report order.
const std::vector<std::string>& known_peers();

}  // namespace blitz::cli
