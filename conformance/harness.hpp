// SPDX-License-Identifier: MIT
#pragma once
// The conformance harness: runs the checkers over configs and each negative control
// (harness.cpp), then prints and writes the table (harness_report.cpp).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "blitz/config.hpp"
#include "checker.hpp"
#include "machine_record.hpp"

namespace blitz::conformance {

struct harness_options {
    bool quick = true;
    std::uint64_t seed = 1;
    std::vector<std::string> filter;         // checker ids; empty: all
    std::vector<unsigned> workers{1, 2, 4};  // configs
    // Placement passes for the checkers other than N: each runs every worker count that fits
    // (pinned passes skip counts above this machine's PUs).
    std::vector<placement_policy> policies{placement_policy::none};
    // io_mode passes: each pinned pass runs once per mode (busy needs pinning, so the unpinned
    // pass is always shared). Labels say "busy compact W=2".
    std::vector<io_mode_kind> io_modes{io_mode_kind::shared};
    // The current-thread pass: the checkers marked current_thread run once more, and their
    // controls too, on a current-thread runtime (W=1).
    bool current_thread = true;
    std::string out_dir;  // where conformance.md/.json go; empty: don't write
    std::string command;  // the command line, printed to reproduce the run
    // Topologies the N checkers run on besides this machine (--topology); empty: the shipped
    // shapes in conformance/topologies/.
    std::vector<std::string> topologies;
    // The pinned passes place their runtimes on this topology instead of this machine (a
    // synthetic string or a file; nothing is bound, so busy passes are left out); empty: here.
    std::string place_on;
    // config::park_spin for every runtime the checkers start (--park-spin; 0: off, the default).
    std::chrono::microseconds park_spin{0};
    // A run with no progress for this long is a hang (0: 30 s quick, 120 s full).
    unsigned hang_limit_s = 0;
    // Runs only H0, a checker that deadlocks on purpose, to show the hang verdict (ctest).
    bool hang_selftest = false;
    // Stop the suite after this many hangs outside negative controls (0: never). A defect that
    // hangs every checker would otherwise cost the hang limit once per run; mutation testing
    // needs only the first.
    unsigned max_hangs = 0;
    // JUnit XML (one test case per checker and configuration): a file, "-" for stdout, or
    // empty for none.
    std::string junit;
    // The JSON report on stdout (the human table then goes to stderr).
    bool json_stdout = false;
};

// A checker's work in a child process (`blitz __conformance-child NAME ARGS...`): returns the
// child's exit status. Unknown names give 2.
int run_child(const std::vector<std::string>& args);

// Runs the suite (run_checkers), then prints and writes its report (report_run). Returns the
// process exit status: 0 only if every checker passed and every control was caught.
int run_harness(const harness_options& o);

// One checker's row: its totals over every config and its negative control's outcome.
// One run of a checker: a configuration ("compact W=2", "xeon-2c-kvm.xml W=1") or its
// negative control, for the per-configuration reports (JUnit).
struct config_outcome {
    std::string label;
    outcome o;
    double seconds = 0;
    bool control = false;  // the negative control (it passes when violations were reported)
};

struct checker_row {
    const checker* c = nullptr;
    std::vector<config_outcome> configs;  // every applicable run, in order
    outcome total;
    outcome control;
    bool caught = false;
    // The control cannot show on this machine (e.g. it breaks io_uring and io_uring is
    // unavailable): the row stands on its checker alone, and the report says so.
    bool control_na = false;
    bool pass = false;
    bool applicable = false;  // some config could exercise the invariant
    std::string na_reason;    // why not, when a checker said (its note)
    double seconds = 0;
};

// What a run of the suite produced, before anything is printed or written.
struct suite_run {
    report::machine_record machine;  // read as the run starts (date, load average)
    std::vector<checker_row> rows;
    std::vector<std::string> topologies;  // "" (this machine) first, then the shapes
    unsigned max_pinned = 0;              // this machine's PUs (or --place-on's)
    unsigned hangs = 0;                   // runs abandoned as hangs (each is also a violation)
    unsigned checker_hangs = 0;           // of those, outside negative controls
    unsigned not_run = 0;                 // checkers skipped after max_hangs hangs
    double seconds = 0;
    // True if some checker applied and every applicable one passed.
    bool all_pass() const;
};

// How a topology is named in labels and reports: "this machine" for "", else the file name.
std::string topology_label(const std::string& t);

// Runs every selected checker over every config, then its negative control. A run past the
// watchdog ends the process with status 3 (a hang).
suite_run run_checkers(const harness_options& o);
// Prints the table and notes; writes conformance.{md,json} and topology.xml to o.out_dir when
// set. Returns the exit status.
int report_run(const harness_options& o, const suite_run& r);

}  // namespace blitz::conformance
