// SPDX-License-Identifier: MIT
#include "demo.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/workloads.hpp"
#include "table.hpp"

namespace blitz::cli {
namespace {

using clock = std::chrono::steady_clock;

using workloads::chain;
using workloads::fan_out;

std::string num(double v, int prec = 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

struct phase {
    std::string name;
    unsigned long tasks;
    double seconds;
    double bytes_per_task;
    bool ok;
};

template <class F>
phase measure(runtime& rt, const std::string& name, unsigned long tasks, F&& body) {
    auto before = rt.metrics();
    auto t0 = clock::now();
    bool ok = body();
    double secs = std::chrono::duration<double>(clock::now() - t0).count();
    auto after = rt.metrics();
    double allocs = double(after.task_allocations - before.task_allocations);
    double bytes = double(after.task_bytes_allocated - before.task_bytes_allocated);
    return {name, tasks, secs, allocs > 0 ? bytes / allocs : 0, ok};
}

void print_counters(const runtime_metrics& m) {
    std::vector<std::string> header{"counter"};
    for (std::size_t i = 0; i < m.workers.size(); ++i) header.push_back("w" + std::to_string(i));
    header.push_back("total");
    table t(header);
    struct row {
        const char* name;
        std::uint64_t worker_metrics::* f;
        bool summable;
    };
    const row rows[] = {
        {"ticks", &worker_metrics::ticks, true},
        {"polls", &worker_metrics::polls, true},
        {"lifo hits", &worker_metrics::lifo_hits, true},
        {"lifo cap flushes", &worker_metrics::lifo_cap_flushes, true},
        {"ring pops", &worker_metrics::ring_pops, true},
        {"steals (ops)", &worker_metrics::steal_ops, true},
        {"steals (tasks)", &worker_metrics::stolen_tasks, true},
        {"steals from own node", &worker_metrics::steals_same_node, true},
        {"steals, same package", &worker_metrics::steals_same_package, true},
        {"steals, other package", &worker_metrics::steals_remote, true},
        {"global fetches (ops)", &worker_metrics::global_fetch_ops, true},
        {"global fetches (tasks)", &worker_metrics::global_fetched, true},
        {"global periodic checks", &worker_metrics::global_periodic, true},
        {"overflows (ops)", &worker_metrics::overflows, true},
        {"overflows (tasks)", &worker_metrics::overflowed_tasks, true},
        {"searches", &worker_metrics::searches, true},
        {"parks", &worker_metrics::parks, true},
        {"unparks: notified", &worker_metrics::unparks_notified, true},
        {"unparks: timeout", &worker_metrics::unparks_timeout, true},
        {"unparks: spurious", &worker_metrics::unparks_spurious, true},
        {"park cancels", &worker_metrics::park_cancels, true},
        {"budget exhaustions", &worker_metrics::budget_exhaustions, true},
        {"local spawns/wakes", &worker_metrics::spawned_local, true},
        {"global interval", &worker_metrics::global_interval, false},
        {"avg poll (ns)", &worker_metrics::avg_poll_ns, false},
    };
    for (const auto& r : rows) {
        std::vector<std::string> cells{r.name};
        for (const auto& w : m.workers) cells.push_back(std::to_string(w.*r.f));
        cells.push_back(r.summable ? std::to_string(m.total(r.f)) : "-");
        t.add(std::move(cells));
    }
    t.print(std::cout);
    std::cout << "runtime: spawned " << m.tasks_spawned << ", global lock acquisitions "
              << m.global_lock_acquisitions << ", claims (wakes issued) " << m.claims
              << ", searcher overshoots " << m.searcher_overshoots << ", searching "
              << m.num_searching << ", parked " << m.num_parked << "\n";
}

}  // namespace

int run_demo(const demo_options& o) {
    config cfg;
    cfg.workers = o.workers;
    cfg.topology = o.topology;
    runtime rt(cfg);
    std::cout << "blitz demo: " << rt.num_workers()
              << " workers\nplacement: " << rt.placement().summary() << "\n\n";

    std::vector<phase> phases;
    phases.push_back(measure(rt, "fan-out", o.fanout, [&] {
        unsigned long got = rt.block_on(fan_out(o.fanout));
        return got == o.fanout * (o.fanout - 1) / 2;
    }));
    phases.push_back(measure(rt, "spawn chain", o.chain,
                             [&] { return rt.block_on(chain(o.chain)) == o.chain; }));

    table t({"workload", "tasks", "seconds", "tasks/s", "bytes/task", "result"});
    bool all_ok = true;
    for (const auto& p : phases) {
        all_ok = all_ok && p.ok;
        t.add({p.name, std::to_string(p.tasks), num(p.seconds, 3), num(p.tasks / p.seconds),
               num(p.bytes_per_task, 1), p.ok ? "ok" : "WRONG"});
    }
    t.print(std::cout);
    std::cout << "(bytes/task: the one allocation per spawn, task header plus coroutine frame; "
                 "target <= 256)\n\n";
    print_counters(rt.metrics());
    return all_ok ? 0 : 1;
}

}  // namespace blitz::cli
