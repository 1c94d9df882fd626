// SPDX-License-Identifier: MIT
#include "bench_compare.hpp"

#include <gtest/gtest.h>

namespace blitz::report {
namespace {

TEST(MannWhitney, ExactForSmallSamples) {
    // Every a below every b: U = 0, which 2 of the C(10,5) = 252 orderings reach (either side).
    EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 2.0 / 252, 1e-12);
    EXPECT_NEAR(mann_whitney_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 2.0 / 252, 1e-12);
    // Perfectly interleaved: no evidence of a difference.
    EXPECT_GT(mann_whitney_p({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10}), 0.5);
    EXPECT_EQ(mann_whitney_p({}, {1, 2}), 1.0);
}

TEST(MannWhitney, NormalApproximationForLargeOrTiedSamples) {
    std::vector<double> a, b, c;
    for (int i = 0; i < 30; ++i) {
        a.push_back(100 + i);
        b.push_back(150 + i);    // shifted well past a
        c.push_back(100.5 + i);  // interleaved with a
    }
    EXPECT_LT(mann_whitney_p(a, b), 1e-6);
    EXPECT_GT(mann_whitney_p(a, c), 0.5);
    EXPECT_DOUBLE_EQ(mann_whitney_p(a, b), mann_whitney_p(b, a));
    // All equal: nothing to tell apart.
    EXPECT_EQ(mann_whitney_p({5, 5, 5}, {5, 5, 5}), 1.0);
}

json_value report_of(const char* rows) {
    return json_value::parse(std::string(R"({"machine": {}, "results": [)") + rows + "]}");
}

TEST(CompareReports, MatchesRowsByWorkersWorkloadAndImplementation) {
    const json_value a = report_of(R"(
        {"workers": 4, "workload": "spawn", "implementation": "blitz", "reps_ns": [100, 110, 105]},
        {"workers": 4, "workload": "spawn", "implementation": "tokio", "reps_ns": [200, 210, 205]},
        {"workers": 2, "workload": "chain", "implementation": "blitz", "not_run": "crashed"},
        {"workers": 4, "workload": "old", "implementation": "blitz", "reps_ns": [1]})");
    const json_value b = report_of(R"(
        {"workers": 4, "workload": "spawn", "implementation": "blitz", "reps_ns": [50, 55, 52]},
        {"workers": 4, "workload": "spawn", "implementation": "tokio", "reps_ns": [200, 210, 205]},
        {"workers": 4, "workload": "new", "implementation": "blitz", "reps_ns": [1]})");
    const comparison c = compare_reports(a, b);
    ASSERT_EQ(c.rows.size(), 2u);
    EXPECT_EQ(c.rows[0].implementation, "blitz");
    EXPECT_DOUBLE_EQ(c.rows[0].ratio, 52.0 / 105.0);
    EXPECT_DOUBLE_EQ(c.rows[1].ratio, 1.0);
    EXPECT_EQ(c.only_a, std::vector<std::string>{"old W=4 blitz"});
    EXPECT_EQ(c.only_b, std::vector<std::string>{"new W=4 blitz"});
    EXPECT_THROW(compare_reports(json_value::parse("{}"), b), json_error);
}

}  // namespace
}  // namespace blitz::report
