// SPDX-License-Identifier: MIT
#pragma once
// What was measured for one (workload, implementation) and the statistics the report prints.

#include <string>
#include <vector>

namespace blitz::bench {

// Every repetition of one implementation on one workload at one worker count.
struct series {
    std::string version, placement, not_run;
    long ops = 0;
    std::vector<double> reps, samples;
    double allocs = -1, bytes = -1;
    bool seen = false;
};

struct stats {
    double median = 0, min = 0, max = 0, cv = 0;
};

// The q-quantile with linear interpolation (q = 0.5: the median); 0 for no values.
double quantile(std::vector<double> v, double q);
// Median, range and coefficient of variation.
stats summarize(const std::vector<double>& v);
// a's repetition i over b's repetition i (both from the same round), for every round both ran.
std::vector<double> pair_ratios(const series& a, const series& b);

// printf-style formatting of one number.
std::string fmt(const char* f, double v);
// A duration in ns with a readable unit.
std::string dur(double ns);

}  // namespace blitz::bench
