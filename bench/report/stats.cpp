// SPDX-License-Identifier: MIT
#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace blitz::bench {

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

stats summarize(const std::vector<double>& v) {
    stats s;
    if (v.empty()) return s;
    s.median = quantile(v, 0.5);
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    double mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    s.cv = v.size() > 1 && mean > 0 ? std::sqrt(var / static_cast<double>(v.size() - 1)) / mean : 0;
    return s;
}

// blitz's repetition i over the peer's repetition i (both from the same round), for every
// round both ran.
std::vector<double> pair_ratios(const series& a, const series& b) {
    std::vector<double> r;
    for (std::size_t i = 0; i < std::min(a.reps.size(), b.reps.size()); ++i) {
        if (b.reps[i] > 0) r.push_back(a.reps[i] / b.reps[i]);
    }
    return r;
}

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

// A duration in ns with a readable unit.
std::string dur(double ns) {
    if (ns >= 1e9) return fmt("%.3f s", ns / 1e9);
    if (ns >= 1e6) return fmt("%.2f ms", ns / 1e6);
    if (ns >= 1e3) return fmt("%.1f us", ns / 1e3);
    return fmt("%.1f ns", ns);
}

}  // namespace blitz::bench
