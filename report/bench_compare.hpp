// SPDX-License-Identifier: MIT
#pragma once
// `blitz compare A.json B.json`: the rows two benchmark reports share, each with the ratio of
// the medians (B / A) and a Mann-Whitney U test over the repetitions, as Google Benchmark's
// compare.py reports them. The statistics live here so they can be tested without files.

#include <optional>
#include <string>
#include <vector>

#include "json_reader.hpp"

namespace blitz::report {

// Two-sided p-value of the Mann-Whitney U test that `a` and `b` come from the same
// distribution: exact for small samples without ties (both at most 10), else the normal
// approximation with tie and continuity corrections. 1 when either sample is empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

struct compared_row {
    unsigned workers = 0;
    std::string workload, implementation;
    double median_a = 0, median_b = 0;  // ns per repetition
    double ratio = 0;                   // median_b / median_a: below 1, B is faster
    double p = 1;                       // Mann-Whitney U over the repetitions
    std::size_t n_a = 0, n_b = 0;
};

struct comparison {
    std::vector<compared_row> rows;
    std::vector<std::string> only_a, only_b;  // "workload W=4 implementation"
};

// Matches the "results" rows of two bench.json documents by (workers, workload,
// implementation); rows not run on either side are skipped. Throws json_error on a document
// that is not a bench report.
comparison compare_reports(const json_value& a, const json_value& b);

}  // namespace blitz::report
