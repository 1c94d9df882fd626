// SPDX-License-Identifier: MIT
#include "topo/plan.hpp"

#include <algorithm>
#include <sstream>

#include "base/os.hpp"
#include "blitz/detail/faults.hpp"
#include "topo/machine.hpp"

namespace blitz {
namespace {

std::string plural(unsigned n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

const char* to_string(placement_policy p) noexcept {
    switch (p) {
        case placement_policy::none:
            return "none";
        case placement_policy::compact:
            return "compact";
        case placement_policy::scatter:
            return "scatter";
        case placement_policy::list:
            return "list";
    }
    return "?";
}

placement_policy parse_placement_policy(const std::string& s) {
    for (auto p : {placement_policy::none, placement_policy::compact, placement_policy::scatter,
                   placement_policy::list}) {
        if (s == to_string(p)) return p;
    }
    throw config_error("unknown placement policy '" + s +
                       "' (expected none, compact, scatter or list)");
}

std::string placement_report::summary() const {
    if (pus == 0) return "none: unpinned (topology not inspected)";
    std::ostringstream os;
    os << to_string(policy) << (one_pu_per_core ? " (one PU per core)" : "") << " on " << source
       << " (" << plural(packages, "package", "packages") << ", "
       << plural(static_cast<unsigned>(nodes.size()), "NUMA node", "NUMA nodes") << ", "
       << plural(cores, "core", "cores") << ", " << plural(pus, "PU", "PUs") << ")";
    if (policy == placement_policy::none) return os.str() + ": unpinned";
    os << ":";
    bool all_bound = !workers.empty(), any_mem = false, started = false;
    for (const worker_placement& w : workers) {
        os << " w" << w.worker << "->PU" << w.pu;
        all_bound = all_bound && w.bound;
        any_mem = any_mem || w.memory_bound;
        started = started || !w.observed_cpus.empty();
    }
    if (synthetic) {
        os << "; not this machine, nothing bound";
    } else if (started) {  // a running runtime's report (plan_placement binds nothing)
        os << (all_bound ? "; bound" : "; NOT bound");
    }
    if (numa_stealing) os << "; NUMA-aware stealing";
    if (any_mem) os << "; node-local memory";
    return os.str();
}

placement_report plan_placement(const config& cfg, unsigned workers) {
    config checked = cfg;
    if (workers) checked.workers = workers;
    checked.validate();
    return detail::topo::make_plan(cfg, workers, /*inspect=*/true).report;
}

namespace detail::topo {

plan make_plan(const config& cfg, unsigned workers, bool inspect) {
    const topology_options& o = cfg.topology;
    plan p;
    placement_report& r = p.report;
    machine m;
    if (o.policy == placement_policy::none && o.source.empty() && !inspect) {
        // Nothing to place and no topology asked for: skip the hwloc discovery (most of a
        // millisecond here); the workers below are listed unplaced.
        r.source = "this machine (not inspected: no placement)";
    } else {
        m = load_machine(o.source);
        r.source = m.source;
        r.synthetic = !m.thissystem;
        r.packages = m.packages;
        r.cores = m.cores;
        r.pus = static_cast<unsigned>(m.pus.size());
        for (unsigned n = 0; n < m.nodes.size(); ++n) {
            numa_node_info ni{n, m.nodes[n].os, m.nodes[n].package, {}};
            for (unsigned i : m.nodes[n].pus) ni.pus.push_back(m.pus[i].os);
            r.nodes.push_back(std::move(ni));
        }
        r.distances = m.distances;
    }
    r.policy = o.policy;
    r.one_pu_per_core = o.one_pu_per_core;
    r.numa_stealing = o.numa_stealing;
    p.placed = o.policy != placement_policy::none;

    if (workers == 0) workers = cfg.workers;
    if (workers == 0) {
        if (o.policy == placement_policy::list) {
            workers = static_cast<unsigned>(o.pus.size());
        } else if (p.placed) {
            workers =
                std::min<unsigned>(static_cast<unsigned>(eligible_pus(m, o.one_pu_per_core).size()),
                                   config::max_workers);
            // On this machine the eligible PUs are the affinity mask's already; a cgroup CPU
            // quota caps them further (issue 47). A synthetic topology has no quota.
            if (m.thissystem) workers = std::max(1u, std::min(workers, read_cpu_budget().count));
        } else {
            workers = cfg.resolved_workers();
        }
    }
    std::vector<unsigned> where;
    if (p.placed)
        where = place_workers(m, o, workers, BLITZ_FAULT(cfg.debug.scatter_ignores_nodes));

    // Node-local memory needs a real machine whose kernel agrees it has several nodes: libnuma
    // "succeeds" on a one-node machine by placing the pages on node 0.
    const bool memory_requests = p.placed && o.numa_memory && m.thissystem && m.nodes.size() > 1 &&
                                 os::kernel_numa_nodes() > 1;
    for (unsigned w = 0; w < workers; ++w) {
        worker_placement wp;
        wp.worker = w;
        int bind = -1, kernel_node = -1;
        worker_site site;
        if (p.placed) {
            const pu_info& pu = m.pus[where[w]];
            wp.pu = static_cast<int>(pu.os);
            wp.core = static_cast<int>(pu.core);
            wp.node = static_cast<int>(pu.node);
            wp.package = static_cast<int>(pu.package);
            site = worker_site{pu.node, pu.package};
            if (m.thissystem) {
                // N1's negative control binds to the next PU of the machine.
                bind = static_cast<int>(BLITZ_FAULT(cfg.debug.bind_wrong_pu)
                                            ? m.pus[(where[w] + 1) % m.pus.size()].os
                                            : pu.os);
            }
            if (o.numa_memory) {
                const unsigned node = BLITZ_FAULT(cfg.debug.memory_on_node0) ? 0u : pu.node;
                wp.memory_node = static_cast<int>(node);
                if (memory_requests) kernel_node = static_cast<int>(m.nodes[node].os);
            }
        }
        r.workers.push_back(std::move(wp));
        p.bind_cpu.push_back(bind);
        p.memory_kernel_node.push_back(kernel_node);
        p.sites.push_back(site);
    }
    return p;
}

}  // namespace detail::topo
}  // namespace blitz
