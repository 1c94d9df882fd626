// SPDX-License-Identifier: MIT
#pragma once
// The placement every checker's runtime uses in the current pass of the suite (unpinned, or
// pinned with a policy, in shared or busy io_mode). The harness sets it between runs; checkers
// start their configs from fresh(workers), so a pinned pass pins every runtime that fits on this
// machine's PUs.

#include <chrono>
#include <optional>

#include "blitz/config.hpp"

namespace blitz::conformance {

struct suite_placement {
    placement_policy policy = placement_policy::none;
    unsigned max_pinned = 0;  // eligible PUs on this machine: larger runtimes stay unpinned
    std::uint64_t seed = 0;   // the run's --seed: every runtime's worker RNGs start from it
    // The pass's io_mode: busy applies to the runtimes this pass pins (busy needs pinning).
    io_mode_kind io_mode = io_mode_kind::shared;
    // The topology the pinned runtimes are placed on (conformance --place-on): empty for this
    // machine; a synthetic string or a file, where placement is computed and nothing bound.
    std::string source;
    // The current-thread pass (issue 47): fresh(1) is a current-thread runtime, driven by the
    // checker's block_on and join calls; other worker counts stay multi-threaded.
    runtime_flavor flavor = runtime_flavor::multi_thread;
};

inline suite_placement& current_placement() {
    static suite_placement p;  // written by the harness between runs, read by checkers
    return p;
}

// A fixed config::park_spin for every runtime of the run (conformance --park-spin): the idle
// protocol's checkers then see the last searcher spin that long before every park, where the
// default adaptive budget spins only once it has learnt that spins pay. Unset: the config's
// default. Set once, before any checker runs.
inline std::optional<std::chrono::nanoseconds>& suite_park_spin() {
    static std::optional<std::chrono::nanoseconds> spin;
    return spin;
}

// A default config for `workers` workers under the pass's placement.
inline config fresh(unsigned workers) {
    config c;
    c.workers = workers;
    const suite_placement& p = current_placement();
    if (p.flavor == runtime_flavor::current_thread && workers == 1) {
        c.flavor = runtime_flavor::current_thread;
    } else if (p.policy != placement_policy::none && workers <= p.max_pinned) {
        c.topology.policy = p.policy;
        c.topology.source = p.source;
        c.io_mode = p.io_mode;
    }
    c.seed = p.seed;
    // Checkers stall workers on purpose (T6, G2's control): the detector stays on, counted in
    // the metrics, but its reports do not go to stderr between the suite's lines.
    c.on_stall = [](const stall_report&) {};
    if (const auto& spin = suite_park_spin()) {
        c.park_spin = *spin;
        c.park_spin_adaptive = false;
    }
    return c;
}

// True when fresh(workers) is a busy-mode runtime (its idle workers spin and never park).
inline bool busy_pass(unsigned workers) { return fresh(workers).io_mode == io_mode_kind::busy; }

}  // namespace blitz::conformance
