// SPDX-License-Identifier: MIT
#include "runner.hpp"

#include <cstdio>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "alloc_count.hpp"
#include "harness.hpp"  // json_escape
#include "blitz/blitz.hpp"
#ifndef BLITZ_PROBES
#define BLITZ_PROBES 1  // the runtime target sets 0 when it compiles probes out
#endif
#include "bench_workloads.hpp"

#ifndef BLITZ_VERSION
#define BLITZ_VERSION "unknown"
#endif

namespace blitz::bench {
namespace {

void print_numbers(std::ostream& os, const std::vector<double>& v) {
    os << '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
        char b[40];
        std::snprintf(b, sizeof b, "%.0f", v[i]);
        os << (i ? "," : "") << b;
    }
    os << ']';
}

}  // namespace

int run_workloads(const runner_options& o) {
    const std::regex re(o.filter);
    int failures = 0;
    for (const workload& w : workloads()) {
        if (!std::regex_search(w.name, re)) continue;
        std::ostringstream js;
        js << "{\"peer\":\"" << o.peer << "\",\"version\":\"blitz " << BLITZ_VERSION
           << (BLITZ_PROBES ? "" : " (probes compiled out)") << "\",\"workload\":\"" << w.name
           << "\",\"kind\":\"" << kind_name(w.group) << "\",\"workers\":" << o.workers;
        try {
            config cfg;
            cfg.workers = o.workers;
            cfg.topology = o.topology;
            cfg.park_spin = std::chrono::microseconds(o.park_spin_us);
            runtime rt(cfg);
            if (o.warmup) (void)w.run(rt);
            std::vector<double> reps, samples;
            for (unsigned i = 0; i < o.reps; ++i) {
                rep r = w.run(rt);
                reps.push_back(r.ns);
                samples.insert(samples.end(), r.samples_ns.begin(), r.samples_ns.end());
            }
            js << ",\"ops\":" << w.ops << ",\"reps_ns\":";
            print_numbers(js, reps);
            if (!samples.empty()) {
                js << ",\"samples_ns\":";
                print_numbers(js, samples);
            }
            if (o.count_allocs && w.group != kind::latency) {
                const alloc_totals a0 = allocations();
                count_allocations(true);
                (void)w.run(rt);
                count_allocations(false);
                const alloc_totals a1 = allocations();
                char b[96];
                std::snprintf(b, sizeof b, ",\"allocs_per_op\":%.4f,\"bytes_per_op\":%.1f",
                              double(a1.count - a0.count) / double(w.ops),
                              double(a1.bytes - a0.bytes) / double(w.ops));
                js << b;
            }
            js << ",\"placement\":\"" << conformance::json_escape(rt.placement().summary()) << "\"";
        } catch (const std::exception& e) {
            js << ",\"error\":\"" << conformance::json_escape(e.what()) << "\"";
            ++failures;
        }
        js << "}";
        std::cout << js.str() << std::endl;
    }
    return failures == 0 ? 0 : 1;
}

int runner_main(int argc, char** argv) {
    runner_options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--workers") {
            o.workers = static_cast<unsigned>(std::stoul(value()));
        } else if (a == "--reps") {
            o.reps = static_cast<unsigned>(std::stoul(value()));
        } else if (a == "--filter") {
            o.filter = value();
        } else if (a == "--allocs") {
            o.count_allocs = true;
        } else if (a == "--pin") {
            o.topology.policy = parse_placement_policy(value());
        } else if (a == "--no-warmup") {
            o.warmup = false;
        } else if (a == "--park-spin-us") {
            o.park_spin_us = static_cast<unsigned>(std::stoul(value()));
        } else if (a == "--peer") {
            o.peer = value();
        } else {
            throw std::invalid_argument("bench-run: unknown argument '" + a + "'");
        }
    }
    if (o.workers == 0) throw std::invalid_argument("bench-run: --workers must be positive");
    return run_workloads(o);
}

}  // namespace blitz::bench
