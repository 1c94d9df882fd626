// SPDX-License-Identifier: MIT
#include "runner.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "alloc_count.hpp"
#include "blitz/blitz.hpp"
#include "json_writer.hpp"
#ifndef BLITZ_PROBES
#define BLITZ_PROBES 1  // the runtime target sets 0 when it compiles probes out
#endif
#include "bench_workloads.hpp"
#include "blitz/version.hpp"

namespace blitz::bench {

int run_workloads(const runner_options& o) {
    const std::regex re(o.filter);
    int failures = 0;
    for (const workload& w : workloads()) {
        if (!std::regex_search(w.name, re)) continue;
        std::ostringstream line;
        report::json_writer js(line);
        js.begin_object()
            .field("peer", o.peer)
            .field("version", std::string("blitz ") + BLITZ_VERSION_STRING +
                                  (BLITZ_PROBES ? "" : " (probes compiled out)"))
            .field("workload", w.name)
            .field("kind", kind_name(w.group))
            .field("workers", o.workers);
        const bool current_thread = o.flavor == runtime_flavor::current_thread;
        if (current_thread && !w.run_current_thread) {
            js.field("not_run",
                     std::string("the current-thread column runs spawn_many_local, yield_many, "
                                 "ping_pong and chained_spawn only"));
            js.end_object();
            std::cout << line.str() << std::endl;
            continue;
        }
        const auto& run = current_thread ? w.run_current_thread : w.run;
        try {
            config cfg;
            cfg.workers = o.workers;
            cfg.topology = o.topology;
            if (o.park_spin_us) cfg.park_spin = std::chrono::microseconds(*o.park_spin_us);
            if (o.park_spin_fixed) cfg.park_spin_adaptive = false;
            cfg.io_mode = o.io_mode;
            if (current_thread) {
                cfg.flavor = runtime_flavor::current_thread;
                cfg.workers = 1;
            }
            if (o.stall_threshold_ms)
                cfg.stall_threshold = std::chrono::milliseconds(*o.stall_threshold_ms);
            runtime rt(cfg);
            if (o.warmup) (void)run(rt);
            std::vector<double> reps, samples;
            for (unsigned i = 0; i < o.reps; ++i) {
                rep r = run(rt);
                reps.push_back(std::round(r.ns));
                for (double x : r.samples_ns) samples.push_back(std::round(x));
            }
            js.field("ops", w.ops).field("reps_ns", reps);
            if (!samples.empty()) js.field("samples_ns", samples);
            if (o.count_allocs && w.group != kind::latency) {
                const alloc_totals a0 = allocations();
                count_allocations(true);
                (void)run(rt);
                count_allocations(false);
                const alloc_totals a1 = allocations();
                js.field("allocs_per_op", double(a1.count - a0.count) / double(w.ops))
                    .field("bytes_per_op", double(a1.bytes - a0.bytes) / double(w.ops));
            }
            js.field("placement", rt.placement().summary());
        } catch (const std::exception& e) {
            js.field("error", e.what());
            ++failures;
        }
        js.end_object();
        std::cout << line.str() << std::endl;
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
        } else if (a == "--smoke") {
            bench::set_smoke(true);
        } else if (a == "--park-spin-us") {
            o.park_spin_us = static_cast<unsigned>(std::stoul(value()));
        } else if (a == "--park-spin-fixed") {
            o.park_spin_fixed = true;
        } else if (a == "--io-mode") {
            o.io_mode = parse_io_mode(value());
        } else if (a == "--flavor") {
            o.flavor = parse_flavor(value());
        } else if (a == "--stall-threshold-ms") {
            o.stall_threshold_ms = static_cast<unsigned>(std::stoul(value()));
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
