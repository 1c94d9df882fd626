// SPDX-License-Identifier: MIT
#include "compare.hpp"

#include <cstdlib>
#include <iostream>
#include <regex>

#include "bench_compare.hpp"
#include "json_writer.hpp"
#include "stats.hpp"
#include "table.hpp"

namespace blitz::cli {
namespace {

void compare_help() {
    std::cout
        << "usage: blitz compare A.json B.json [--filter RE] [--implementation NAME] [--alpha P]\n"
           "                     [--format text|json]\n"
           "Compares two `blitz bench` reports (bench.json) row by row: the median of each\n"
           "row's repetitions in A and in B, the ratio B / A (below 1: B is faster), and the\n"
           "two-sided p-value of a Mann-Whitney U test over the repetitions (exact for up to 10\n"
           "without ties). A row is called faster or slower only when p < alpha; with fewer\n"
           "than 4 repetitions a side no difference can reach the default alpha.\n"
           "  --filter RE            only workloads matching the regular expression\n"
           "  --implementation NAME  only this implementation (default: all; e.g. blitz)\n"
           "  --alpha P              significance level (default 0.05)\n"
           "  --format json          the rows as JSON on stdout\n"
           "exit status: 0 compared, 2 a wrong command line or unreadable report\n";
}

}  // namespace

int compare_main(args& a) {
    std::vector<std::string> files;
    std::string filter, impl, format = "text";
    double alpha = 0.05;
    while (!a.done()) {
        const std::string f = a.next();
        if (f == "-h" || f == "--help") {
            compare_help();
            return 0;
        }
        if (f == "--filter") {
            filter = a.value();
            try {
                (void)std::regex(filter);
            } catch (const std::regex_error&) {
                throw usage_error("compare: --filter: not a regular expression: '" + filter + "'");
            }
        } else if (f == "--implementation") {
            impl = a.value();
        } else if (f == "--alpha") {
            const std::string v = a.value();
            char* end = nullptr;
            alpha = std::strtod(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !(alpha > 0 && alpha < 1)) {
                throw usage_error("compare: --alpha expects a number in (0, 1), got '" + v + "'");
            }
        } else if (f == "--format") {
            format = a.value();
            if (format != "text" && format != "json") {
                throw usage_error("compare: --format takes text or json, got '" + format + "'");
            }
        } else if (!f.empty() && f[0] != '-') {
            files.push_back(f);
        } else {
            a.unknown();
        }
    }
    if (files.size() != 2) {
        throw usage_error("compare: expects two reports, A.json and B.json (got " +
                          std::to_string(files.size()) + ")");
    }
    report::comparison c;
    try {
        c = report::compare_reports(report::read_json_file(files[0]),
                                    report::read_json_file(files[1]));
    } catch (const report::json_error& e) {
        throw usage_error(std::string("compare: ") + e.what());
    }
    const std::regex re(filter);
    std::vector<const report::compared_row*> rows;
    for (const auto& r : c.rows) {
        if (!filter.empty() && !std::regex_search(r.workload, re)) continue;
        if (!impl.empty() && r.implementation != impl) continue;
        rows.push_back(&r);
    }
    auto verdict = [&](const report::compared_row& r) {
        if (r.p >= alpha) return "same";
        return r.ratio < 1 ? "faster" : "slower";
    };
    if (format == "json") {
        report::json_writer w(std::cout, /*pretty=*/true);
        w.begin_object()
            .field("a", files[0])
            .field("b", files[1])
            .field("alpha", alpha)
            .key("rows")
            .begin_array();
        for (const auto* r : rows) {
            w.begin_object()
                .field("workers", r->workers)
                .field("workload", r->workload)
                .field("implementation", r->implementation)
                .field("median_a_ns", r->median_a)
                .field("median_b_ns", r->median_b)
                .field("ratio_b_over_a", r->ratio)
                .field("p", r->p)
                .field("repetitions_a", static_cast<unsigned long long>(r->n_a))
                .field("repetitions_b", static_cast<unsigned long long>(r->n_b))
                .field("verdict", verdict(*r))
                .end_object();
        }
        w.end_array().end_object();
        std::cout << "\n";
        return 0;
    }
    std::cout << "A: " << files[0] << "\nB: " << files[1] << "\n\n";
    table t({"workload", "workers", "implementation", "A median", "B median", "B/A", "p", "B is"});
    for (const auto* r : rows) {
        t.add({r->workload, std::to_string(r->workers), r->implementation, bench::dur(r->median_a),
               bench::dur(r->median_b), bench::fmt("%.3f", r->ratio), bench::fmt("%.4f", r->p),
               verdict(*r)});
    }
    t.print(std::cout);
    std::cout << "\nB/A: ratio of the medians over the repetitions; p: two-sided Mann-Whitney U; "
                 "faster or slower only when p < "
              << alpha << ".\n";
    for (const auto& n : c.only_a) std::cout << "only in A: " << n << "\n";
    for (const auto& n : c.only_b) std::cout << "only in B: " << n << "\n";
    return 0;
}

}  // namespace blitz::cli
