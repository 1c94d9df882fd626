// SPDX-License-Identifier: MIT
#pragma once
// The benchmark's running half: which implementations run (blitz's runner, the baseline, the
// peers) and the interleaved child-process loop that measures them.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "options.hpp"
#include "stats.hpp"

namespace blitz::bench {

// Every peer `--peers` accepts by default, in report order, and the opt-in ones (blitz with
// bounded spinning before parking, the parking experiment).
const std::vector<std::string>& known_peers();
const std::vector<std::string>& extra_peers();

// One implementation: its name in the report, its command without the per-run flags, and why
// it cannot run here ("" = it can).
struct impl {
    std::string name;
    std::vector<std::string> argv;
    std::string missing;
};
// blitz (blitz-runner beside this binary), the baseline if asked for, then each peer.
std::vector<impl> implementations(const bench_options& o);

using key = std::pair<std::string, std::string>;  // (workload, implementation)

// Everything measured at one worker count.
struct run_data {
    unsigned workers = 0;
    std::vector<std::string> names;  // workloads in order
    std::map<std::string, std::string> kinds;
    std::map<key, series> s;
    bool is_latency(const std::string& workload) const;
};

// For every worker count and selected workload, `o.repetitions` rounds; in each round one child
// process per implementation in turn (A B C A B C ...). Progress goes to stderr.
std::vector<run_data> collect(const bench_options& o, const std::vector<impl>& impls);

}  // namespace blitz::bench
