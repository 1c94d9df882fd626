// SPDX-License-Identifier: MIT
#pragma once
// Helpers shared by the checker files: probed configs, first-violation notes, event visits and
// a chi-square bound.

#include <algorithm>
#include <bit>
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

// A config whose workers record the probe `kinds` (all by default). Each worker keeps 2^20 events
// up to 8 workers and fewer beyond, so that a wide runtime's rings together hold at most 2^23
// events (256 MiB at 32 bytes) however many workers it has: a full ring drops the newest events,
// so each stream stays a prefix of what happened, which visit_events notes.
inline config probed(unsigned workers, std::uint32_t kinds = ~std::uint32_t{0}) {
    config c = fresh(workers);
    c.probes = true;
    c.probe_kinds = kinds;
    const unsigned share = (1u << 23) / std::max(workers, 1u);
    c.probe_capacity = std::clamp(std::bit_floor(share), 1u << 12, 1u << 20);
    return c;
}

// The park timeout for an idle-protocol check that wants many timeout wakes at W workers: `floor`,
// or W x 400 us when that is longer. Each wake costs tens of microseconds of CPU on a small VM, so
// 256 workers at 2 ms kept two CPUs busy with nothing but their own wakes: the runtime was never
// seen at rest, and on a machine loaded by a parallel build a checker waited minutes for it.
inline std::chrono::nanoseconds wide_park_timeout(unsigned workers,
                                                  std::chrono::nanoseconds floor) {
    return std::max(floor, std::chrono::nanoseconds(std::chrono::microseconds(400) * workers));
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

// Shuts `rt` down, then calls f(event) for every event it recorded, worker by worker in recording
// order. For checks of the idle protocol with short park timeouts, where the runtime may never
// be seen at rest: after shutdown every stream is complete and no settling is needed.
template <class F>
void visit_events_stopped(runtime& rt, outcome& o, F&& f) {
    rt.shutdown();
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
