// SPDX-License-Identifier: MIT
#pragma once
// The runner side of the benchmark report: runs blitz's workloads and prints one JSON object per
// workload in the schema every peer prints (bench/peers/README.md). `blitz bench` starts it as a
// child process (`blitz bench-run ...`), once per repetition, interleaved with the peers.

#include <optional>
#include <string>

#include "blitz/config.hpp"

namespace blitz::bench {

struct runner_options {
    std::string peer = "blitz";  // the label in the output ("blitz-noprobes" for that build)
    unsigned workers = 4;
    unsigned reps = 1;          // timed repetitions after one untimed warm-up
    std::string filter;         // ECMAScript regular expression on workload names; "" = all
    bool count_allocs = false;  // one extra repetition counting allocations and bytes per op
    topology_options topology;  // placement of the workers
    // config::park_spin (the parking experiment): unset keeps the config's default; fixed turns
    // park_spin_adaptive off.
    std::optional<unsigned> park_spin_us;
    bool park_spin_fixed = false;
    io_mode_kind io_mode = io_mode_kind::shared;  // --io-mode busy (needs --pin)
    // --flavor current_thread: the rows with a current-thread shape, on a current-thread
    // runtime (one worker: the runner's thread); the other rows are reported as not run.
    runtime_flavor flavor = runtime_flavor::multi_thread;
    bool warmup = true;  // --no-warmup: the smoke test runs each workload once
    // config::stall_threshold in ms (--stall-threshold-ms; 0 turns the detector off): unset keeps
    // the default (the cost study of issue 46 runs the default against 0).
    std::optional<unsigned> stall_threshold_ms;
};

// Parses `--workers N --reps N --filter RE --allocs --pin POLICY --peer NAME --park-spin-us N
// --park-spin-fixed --io-mode shared|busy --stall-threshold-ms N --flavor
// multi_thread|current_thread` (argv[0] is the subcommand) and runs; the exit code is non-zero when
// a workload failed its own check.
int runner_main(int argc, char** argv);
int run_workloads(const runner_options& o);

}  // namespace blitz::bench
