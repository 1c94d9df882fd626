// SPDX-License-Identifier: MIT
#include "bench_compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace blitz::report {
namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The number of orderings of m a's and n b's giving each U (count of (a, b) pairs with a > b),
// for the exact test: ways[m][n][u] = ways[m-1][n][u-n] + ways[m][n-1][u].
std::vector<double> u_distribution(std::size_t m, std::size_t n) {
    std::vector<std::vector<std::vector<double>>> w(m + 1, std::vector<std::vector<double>>(n + 1));
    for (std::size_t i = 0; i <= m; ++i) {
        for (std::size_t j = 0; j <= n; ++j) {
            std::vector<double>& cur = w[i][j];
            cur.assign(i * j + 1, 0.0);
            if (i == 0 || j == 0) {
                cur[0] = 1;
                continue;
            }
            for (std::size_t u = 0; u <= i * j; ++u) {
                if (u >= j && u - j < w[i - 1][j].size()) cur[u] += w[i - 1][j][u - j];
                if (u < w[i][j - 1].size()) cur[u] += w[i][j - 1][u];
            }
        }
    }
    return w[m][n];
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
    const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
    if (n1 == 0 || n2 == 0) return 1;
    // Ranks of the pooled sample, ties sharing their average rank.
    std::vector<std::pair<double, int>> pooled;
    for (double x : a) pooled.push_back({x, 0});
    for (double x : b) pooled.push_back({x, 1});
    std::sort(pooled.begin(), pooled.end());
    double rank_sum_a = 0, tie_term = 0;
    bool ties = false;
    for (std::size_t i = 0; i < n;) {
        std::size_t j = i;
        while (j < n && pooled[j].first == pooled[i].first) ++j;
        const double t = double(j - i), avg = (double(i + 1) + double(j)) / 2;
        if (t > 1) ties = true;
        tie_term += t * t * t - t;
        for (std::size_t k = i; k < j; ++k) {
            if (pooled[k].second == 0) rank_sum_a += avg;
        }
        i = j;
    }
    const double u1 = rank_sum_a - double(n1) * double(n1 + 1) / 2;
    const double mean = double(n1) * double(n2) / 2;
    if (!ties && n1 <= 10 && n2 <= 10) {
        const std::vector<double> dist = u_distribution(n1, n2);
        double total = 0;
        for (double c : dist) total += c;
        const auto u = static_cast<std::size_t>(std::llround(std::min(u1, 2 * mean - u1)));
        double tail = 0;  // P(U <= u) on the smaller side
        for (std::size_t k = 0; k <= u && k < dist.size(); ++k) tail += dist[k];
        return std::min(1.0, 2 * tail / total);
    }
    const double var =
        double(n1) * double(n2) / 12 * (double(n + 1) - tie_term / (double(n) * double(n - 1)));
    if (var <= 0) return 1;
    const double z = std::max(0.0, std::fabs(u1 - mean) - 0.5) / std::sqrt(var);
    return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

comparison compare_reports(const json_value& a, const json_value& b) {
    using key = std::tuple<unsigned, std::string, std::string>;
    auto rows_of = [](const json_value& doc) {
        const json_value* results = doc.find("results");
        if (!results || !results->is_array()) {
            throw json_error("not a bench report (no \"results\" array)");
        }
        std::map<key, const json_value*> out;
        for (const json_value& r : results->array()) {
            const json_value* reps = r.find("reps_ns");
            if (!reps) continue;  // not run
            out[{static_cast<unsigned>(r.find("workers")->number()), r.find("workload")->string(),
                 r.find("implementation")->string()}] = &r;
        }
        return out;
    };
    auto reps = [](const json_value& r) {
        std::vector<double> v;
        for (const json_value& x : r.find("reps_ns")->array()) v.push_back(x.number());
        return v;
    };
    auto name = [](const key& k) {
        return std::get<1>(k) + " W=" + std::to_string(std::get<0>(k)) + " " + std::get<2>(k);
    };
    const auto ra = rows_of(a), rb = rows_of(b);
    comparison c;
    for (const auto& [k, row_a] : ra) {
        const auto it = rb.find(k);
        if (it == rb.end()) {
            c.only_a.push_back(name(k));
            continue;
        }
        const std::vector<double> xa = reps(*row_a), xb = reps(*it->second);
        compared_row r;
        r.workers = std::get<0>(k);
        r.workload = std::get<1>(k);
        r.implementation = std::get<2>(k);
        r.median_a = median(xa);
        r.median_b = median(xb);
        r.ratio = r.median_a > 0 ? r.median_b / r.median_a : 0;
        r.p = mann_whitney_p(xa, xb);
        r.n_a = xa.size();
        r.n_b = xb.size();
        c.rows.push_back(std::move(r));
    }
    for (const auto& [k, row_b] : rb) {
        if (!ra.count(k)) c.only_b.push_back(name(k));
    }
    return c;
}

}  // namespace blitz::report
