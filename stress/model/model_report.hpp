// SPDX-License-Identifier: MIT
#pragma once
// What every model test does with a report: expect it to hold (exhausted, no failure) or, for a
// negative control, to fail; print one line per model, and, when BLITZ_MODEL_REPORT names a
// file, append a row to it (scripts/model_report.sh turns the rows into results/<m>/model.md).

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "model.hpp"

namespace blitz::model {

inline void append_row(const char* name, const options& o, const report& r, bool control) {
    std::printf("[model] %s: bound %d%s: %s\n", name, o.preemption_bound,
                o.reduce ? "" : " (no reduction)", summary(r).c_str());
    const char* path = std::getenv("BLITZ_MODEL_REPORT");
    if (!path || !*path) return;
    if (FILE* f = std::fopen(path, "a")) {
        const char* verdict = control ? (r.failed ? "caught" : "NOT CAUGHT")
                                      : (r.failed      ? "FAILED"
                                         : r.exhausted ? "holds"
                                                       : "partial");
        std::fprintf(f, "%s\t%d\t%llu\t%llu\t%llu\t%.3f\t%s\t%s\n", name, o.preemption_bound,
                     static_cast<unsigned long long>(r.executions),
                     static_cast<unsigned long long>(r.redundant),
                     static_cast<unsigned long long>(r.max_depth), r.seconds, verdict,
                     r.failed ? r.failure.c_str() : "");
        std::fclose(f);
    }
}

// BLITZ_MODEL_BOUND=N runs every model with preemption bound N instead of its own (-1: none).
inline options with_env_bound(options o) {
    if (const char* b = std::getenv("BLITZ_MODEL_BOUND"); b && *b)
        o.preemption_bound = std::atoi(b);
    return o;
}

// The model must hold over its whole bounded space.
inline report expect_holds(const char* name, const options& given,
                           const std::function<void()>& body) {
    const options o = with_env_bound(given);
    const report r = explore(o, body);
    append_row(name, o, r, false);
    EXPECT_FALSE(r.failed) << name << ": " << r.failure << "\nschedule " << r.schedule << "\n"
                           << r.trace;
    EXPECT_TRUE(r.exhausted) << name << ": " << summary(r);
    return r;
}

// A negative control: the defect must be found, and its schedule must replay to the same failure.
inline report expect_caught(const char* name, const options& given,
                            const std::function<void()>& body) {
    const options o = with_env_bound(given);
    const report r = explore(o, body);
    append_row(name, o, r, true);
    EXPECT_TRUE(r.failed) << name << ": the defect was not found; " << summary(r);
    if (r.failed) {
        options again = o;
        again.replay = r.schedule;
        const report replayed = explore(again, body);
        EXPECT_TRUE(replayed.failed) << name << ": schedule " << r.schedule << " did not replay";
        EXPECT_EQ(replayed.failure, r.failure) << name;
    }
    return r;
}

}  // namespace blitz::model
