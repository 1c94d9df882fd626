// SPDX-License-Identifier: MIT
#pragma once
// The conformance harness's checker interface (issue 4): one checker per INVARIANTS.md id.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace blitz::conformance {

struct run_params {
    unsigned workers = 2;
    std::uint64_t seed = 1;
    bool quick = true;
    // Topology checkers (N): the topology source to run on ("" = this machine).
    std::string topology;
};

// What one run of a checker's workload saw. `violations` are forbidden outcomes;
// `interesting` are acceptable outcomes worth reporting (e.g. a transient searcher overshoot).
struct outcome {
    std::uint64_t runs = 0;
    std::uint64_t events = 0;
    std::uint64_t violations = 0;
    std::uint64_t interesting = 0;
    bool applicable = true;  // false: the config cannot exercise this invariant (e.g. 1 worker)
    std::string detail;      // the first violation, for the report
    std::string note;        // a measurement worth reporting (latency, overshoots), if any
};

// A checker: the property, its workload and verdict rules (run), and its negative control,
// which is the same run with `faulty` set: a configuration knob that breaks the property on
// purpose. A checker whose control is not caught does not count.
struct checker {
    std::string id;         // INVARIANTS.md id, e.g. "Q5"
    std::string statement;  // the property, in one line
    std::string control;    // what the negative control breaks
    std::function<outcome(const run_params&, bool faulty)> run;
    // Runs once per topology (this machine and each synthetic shape) instead of once per
    // placement pass. A control that returns applicable = false on a topology (e.g. a one-node
    // machine cannot show memory on the wrong node) is skipped there; it must be caught on every
    // topology where it applies, and apply on at least one.
    bool per_topology = false;
    // The checker adapts its workload to busy mode (config io_mode busy, where workers never
    // park) and its control to a busy-mode fault: when the run has a busy pass, the control also
    // runs in a busy pinned configuration and must be caught there too.
    bool busy_control = false;
    // The property is about parking (the bitmap at rest, park timeouts, the last searcher's
    // final check before parking): busy mode's workers never park, so its busy configurations
    // are not applicable (noted in the row) rather than run.
    bool needs_parking = false;
    // The property holds for one worker and the workload drives its runtime only through
    // block_on and join (issue 47): the current-thread pass runs it, and its control, on a
    // current-thread runtime ("current_thread W=1"), where the control must be caught too.
    bool current_thread = false;
};

const std::vector<checker>& all_checkers();

}  // namespace blitz::conformance
