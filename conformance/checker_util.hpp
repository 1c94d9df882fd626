// SPDX-License-Identifier: MIT
#pragma once
// Helpers shared by the checker files: probed configs, first-violation notes, event visits and
// a chi-square bound.

#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "blitz/blitz.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/suite.hpp"
#include "blitz_testing/workloads.hpp"
#include "checker.hpp"

namespace blitz::conformance {

inline config probed(unsigned workers) {
    config c = fresh(workers);
    c.probes = true;
    c.probe_capacity = 1u << 20;
    return c;
}

inline void note_first(outcome& o, const std::string& what) {
    if (o.detail.empty()) o.detail = what;
}

// Records a forbidden outcome (and keeps the first one's description).
inline void forbid(outcome& o, const std::string& what) {
    ++o.violations;
    note_first(o, what);
}

using workloads::let_others_run;

// Polls `done` from a plain thread until it holds or `stall` passes: a hang guard far above what
// a correct run needs, never a verdict on speed. False when it gave up.
template <class F>
bool settled_within(F done, std::chrono::milliseconds stall) {
    const auto until = std::chrono::steady_clock::now() + stall;
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// Settles `rt`, takes its probe streams and calls f(event) for every event, worker by worker in
// recording order; a stream that lost events is noted as incomplete.
template <class F>
void visit_events(runtime& rt, outcome& o, F&& f) {
    workloads::settle(rt);
    const probe_streams s = rt.take_probes();
    if (s.dropped) note_first(o, "probe events dropped: stream incomplete");
    for (const auto& w : s.workers) {
        for (const auto& e : w) f(e);
    }
}

// The chi-square value above which a goodness-of-fit test with `dof` degrees of freedom rejects
// at p = 1e-6 (Wilson-Hilferty approximation). So strict that a correct runtime essentially never
// trips it by chance, while a biased choice trips it at once.
inline double chi_square_limit(unsigned dof) {
    const double k = dof, z = 4.753;
    const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
    return k * t * t * t;
}

}  // namespace blitz::conformance
