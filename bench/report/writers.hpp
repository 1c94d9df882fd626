// SPDX-License-Identifier: MIT
#pragma once
// The benchmark's reporting half: bench.md, bench.json (through the one JSON writer), the
// gnuplot plots, the targets of issue 7 and the terminal summary. Nothing here runs anything.

#include <ostream>
#include <string>
#include <vector>

#include "collect.hpp"
#include "machine_record.hpp"

namespace blitz::bench {

struct report_input {
    const bench_options& o;
    const std::vector<impl>& impls;
    const std::vector<run_data>& runs;
    const report::machine_record& machine;
    double seconds = 0;  // the whole run
};

// bench.md; with `plots_dir` set, draws the plots there first and links them.
std::string render_markdown(const report_input& in, const std::string& plots_dir);
// bench.json: the machine, the command, and every series with its statistics and pair ratios.
void write_json(std::ostream& os, const report_input& in);
// The terminal summary: header and one row per (worker count, workload).
std::vector<std::string> summary_header(const report_input& in);
std::vector<std::vector<std::string>> summary_rows(const report_input& in);

}  // namespace blitz::bench
