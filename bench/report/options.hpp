// SPDX-License-Identifier: MIT
#pragma once
// What `blitz bench` was asked to run.

#include <string>
#include <vector>

#include "blitz/config.hpp"

namespace blitz::bench {

struct bench_options {
    std::string filter;              // regular expression on workload names; "" = all
    std::vector<std::string> peers;  // implementations besides blitz (known: see peers())
    std::vector<unsigned> workers;   // worker counts; default: 4 and the hardware threads
    topology_options topology;       // placement of blitz's workers (--pin POLICY)
    unsigned repetitions = 5;        // timed repetitions per implementation
    unsigned timeout_s = 60;         // one child process longer than this is killed
    std::string out_dir;             // default results/<machine-id>; "-": bench.md on stdout
    bool plots = true;
    bool smoke = false;        // blitz only, once each, no warm-up, nothing written
    bool json_stdout = false;  // --format json: bench.json on stdout
    bool quick = false;        // make run's pass: written to results/<machine>/quick/
    std::string command;       // the command line, recorded in the report
    // --baseline PATH: another build's runner (a blitz-runner, or a blitz binary, run as
    // `blitz bench-run`), interleaved as peer "blitz-baseline" for before/after comparisons.
    std::string baseline;
};

}  // namespace blitz::bench
