// SPDX-License-Identifier: MIT
// Placement: where the workers run. A placement policy pins each worker to a hardware thread
// (a PU, "processing unit", hwloc's name for a logical CPU): compact fills one NUMA node before
// the next (workers that share caches and memory); scatter spreads them over the nodes,
// alternating packages (more memory bandwidth). Both put one worker per core before using a
// core's second hardware thread. The map can be planned for any machine, described by an hwloc
// synthetic string, without running anything there. Exit status 0 when the plans have the shape
// each policy promises and the runtime's workers ran where it reported.
//
//   build/release/example_placement

#include <sched.h>

#include <blitz/blitz.hpp>
#include <cstdio>

bool compact_and_scatter_on_a_two_socket_machine() {
    // Two packages, each one NUMA node of 4 cores with 2 hardware threads: 16 PUs.
    blitz::config c;
    c.topology.source = "pack:2 numa:1 core:4 pu:2";
    c.topology.policy = blitz::placement_policy::compact;
    const blitz::placement_report compact = blitz::plan_placement(c, 4);
    c.topology.policy = blitz::placement_policy::scatter;
    const blitz::placement_report scatter = blitz::plan_placement(c, 4);
    std::printf("%s\n%s\n", compact.summary().c_str(), scatter.summary().c_str());
    // compact: all four in package 0 (its node has 4 cores), one per core.
    bool ok = true;
    for (const auto& w : compact.workers) ok = ok && w.package == 0;
    for (std::size_t i = 1; i < compact.workers.size(); ++i) {
        ok = ok && compact.workers[i].core != compact.workers[i - 1].core;
    }
    // scatter: consecutive workers land on different packages.
    ok = ok && scatter.workers[0].package != scatter.workers[1].package;
    return ok;
}

blitz::task<int> where_am_i() { co_return sched_getcpu(); }

bool pinned_on_this_machine() {
    blitz::config c;
    c.workers = 2;
    c.topology.policy = blitz::placement_policy::compact;
    c.topology.best_effort = true;  // a container may forbid binding: record it, do not fail
    blitz::runtime rt(c);
    const blitz::placement_report& p = rt.placement();
    std::printf("this machine: %s\n", p.summary().c_str());
    bool ok = true;
    for (const auto& w : p.workers) {
        // A bound worker saw exactly its own PU in its CPU set.
        if (w.bound) ok = ok && w.observed_cpus.size() == 1 && int(w.observed_cpus[0]) == w.pu;
    }
    // A task runs on one of the workers' PUs.
    const int cpu = rt.block_on(where_am_i());
    bool on_a_worker_pu = false;
    for (const auto& w : p.workers) on_a_worker_pu = on_a_worker_pu || !w.bound || w.pu == cpu;
    std::printf("a task ran on CPU %d\n", cpu);
    return ok && on_a_worker_pu;
}

int main() {
    const bool ok = compact_and_scatter_on_a_two_socket_machine() && pinned_on_this_machine();
    std::puts(ok ? "placement: ok" : "placement: WRONG");
    return ok ? 0 : 1;
}
