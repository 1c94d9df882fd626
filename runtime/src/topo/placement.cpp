// SPDX-License-Identifier: MIT
#include "topo/placement.hpp"

#include <algorithm>
#include <string>

#include "blitz/detail/faults.hpp"
#include "blitz/topology.hpp"

namespace blitz::detail::topo {
namespace {

// A node's usable PUs in fill order: the first PU of every core, then the second of every core,
// and so on (one_pu_per_core stops after the first round).
std::vector<unsigned> node_fill_order(const machine& m, const node_info& n, bool one_pu_per_core) {
    std::vector<unsigned> order;
    for (unsigned rank = 0;; ++rank) {
        bool any = false;
        for (unsigned i : n.pus) {
            if (m.pus[i].sibling == rank) {
                order.push_back(i);
                any = true;
            }
        }
        if (!any || one_pu_per_core) break;
    }
    return order;
}

std::string pu_count_text(const machine& m, const topology_options& o, std::size_t eligible) {
    return std::to_string(eligible) + (o.one_pu_per_core ? " cores (one PU per core)" : " PUs") +
           " on " + m.source;
}

}  // namespace

std::vector<unsigned> eligible_pus(const machine& m, bool one_pu_per_core) {
    std::vector<unsigned> r;
    for (unsigned i = 0; i < m.pus.size(); ++i) {
        if (!one_pu_per_core || m.pus[i].sibling == 0) r.push_back(i);
    }
    return r;
}

std::vector<unsigned> place_workers(const machine& m, const topology_options& o, unsigned workers,
                                    bool fault_scatter_ignores_nodes) {
    std::vector<unsigned> out;
    if (o.policy == placement_policy::list) {
        if (o.pus.size() != workers) {
            throw topology_error("placement list names " + std::to_string(o.pus.size()) +
                                 " PUs for " + std::to_string(workers) + " workers");
        }
        for (unsigned k = 0; k < o.pus.size(); ++k) {
            const unsigned os = o.pus[k];
            auto it = std::find_if(m.pus.begin(), m.pus.end(),
                                   [&](const pu_info& p) { return p.os == os; });
            if (it == m.pus.end()) {
                std::string have;
                for (const pu_info& p : m.pus)
                    have += (have.empty() ? "" : ",") + std::to_string(p.os);
                throw topology_error("placement list: PU " + std::to_string(os) + " (worker " +
                                     std::to_string(k) + ") does not exist on " + m.source +
                                     " (PUs: " + have + ")");
            }
            const unsigned idx = static_cast<unsigned>(it - m.pus.begin());
            if (std::find(out.begin(), out.end(), idx) != out.end()) {
                throw topology_error("placement list: PU " + std::to_string(os) +
                                     " is given to more than one worker (worker " +
                                     std::to_string(k) + ")");
            }
            out.push_back(idx);
        }
        return out;
    }

    const std::size_t eligible = eligible_pus(m, o.one_pu_per_core).size();
    if (workers > eligible) {
        throw topology_error(std::string("placement ") + to_string(o.policy) + ": " +
                             std::to_string(workers) + " pinned workers but only " +
                             pu_count_text(m, o, eligible));
    }
    std::vector<std::vector<unsigned>> per_node;
    for (const node_info& n : m.nodes) per_node.push_back(node_fill_order(m, n, o.one_pu_per_core));

    if (o.policy == placement_policy::compact) {
        for (const auto& order : per_node) {
            for (unsigned i : order) {
                if (out.size() == workers) return out;
                out.push_back(i);
            }
        }
        return out;
    }

    if (BLITZ_FAULT(fault_scatter_ignores_nodes)) {
        // N2's negative control: "spread" as one worker per core in PU order, blind to nodes.
        std::vector<unsigned> all;
        for (unsigned rank = 0; all.size() < eligible; ++rank) {
            for (unsigned i = 0; i < m.pus.size(); ++i) {
                if (m.pus[i].sibling == rank) all.push_back(i);
            }
        }
        all.resize(workers);
        return all;
    }

    // scatter: visit nodes so that consecutive nodes alternate packages (P0's first node, P1's
    // first node, ..., P0's second node, ...), and give each visited node its next PU until all
    // workers have one. Full nodes are skipped, so node counts stay within one of each other
    // until a node runs out.
    std::vector<std::vector<unsigned>> by_package(m.packages);
    for (unsigned n = 0; n < m.nodes.size(); ++n) by_package[m.nodes[n].package].push_back(n);
    std::vector<unsigned> node_order;
    for (std::size_t round = 0; node_order.size() < m.nodes.size(); ++round) {
        for (const auto& nodes : by_package) {
            if (round < nodes.size()) node_order.push_back(nodes[round]);
        }
    }
    std::vector<std::size_t> used(m.nodes.size(), 0);
    while (out.size() < workers) {
        for (unsigned n : node_order) {
            if (out.size() == workers) break;
            if (used[n] < per_node[n].size()) out.push_back(per_node[n][used[n]++]);
        }
    }
    return out;
}

victim_tiers tiers_for(const std::vector<worker_site>& sites, unsigned self, bool flat) {
    victim_tiers t;
    for (unsigned tier = 0; tier < 3; ++tier) {
        for (unsigned v = 0; v < sites.size(); ++v) {
            if (v == self) continue;
            const unsigned d =
                flat ? 0 : static_cast<unsigned>(distance_between(sites[self], sites[v]));
            if (d == tier) t.victims.push_back(v);
        }
        t.end[tier] = static_cast<unsigned>(t.victims.size());
    }
    return t;
}

}  // namespace blitz::detail::topo
