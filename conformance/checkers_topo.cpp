// SPDX-License-Identifier: MIT
// N checkers: placement and pinning (N1), placement maps (N2), node-local worker memory (N3)
// and NUMA-aware victim order (N4). Each runs on this machine and on every synthetic shape.

#include <algorithm>
#include <atomic>
#include <climits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/os.hpp"
#include "base/rng.hpp"
#include "blitz_testing/workloads.hpp"
#include "checker_util.hpp"
#include "registry.hpp"
#include "sched/worker.hpp"
#include "topo/machine.hpp"
#include "topo/placement.hpp"

namespace blitz::conformance {
namespace {

namespace topo = detail::topo;
namespace os = detail::os;
using topo::machine;

std::string cpus_text(const std::vector<unsigned>& v) {
    std::string s = "{";
    for (std::size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + (v.size() > 8 ? ",...}" : "}");
}

unsigned eligible(const machine& m, bool one_per_core = false) {
    return static_cast<unsigned>(topo::eligible_pus(m, one_per_core).size());
}

config placed(const run_params& p, placement_policy policy, unsigned workers) {
    config c = fresh(workers);
    c.topology.source = p.topology;
    c.topology.policy = policy;
    return c;
}

// ---- N1 -----------------------------------------------------------------------------------

struct sample {
    std::atomic<int> worker{-1};
    int cpu = -1;
    std::vector<unsigned> cpus;
};

task<void> record_site(sample& s, int yields) {
    for (int i = 0; i <= yields; ++i) {
        if (i) co_await yield_now();
        s.cpu = os::current_cpu();
        s.cpus = os::this_thread_cpus();
        s.worker.store(static_cast<int>(detail::current_worker()->index()),
                       std::memory_order_release);
    }
}

task<void> spread_samples(std::vector<sample>& samples, int yields) {
    std::vector<join_handle<void>> hs;
    for (auto& s : samples) hs.push_back(spawn(record_site(s, yields)));
    for (auto& h : hs) co_await h;
}

// From inside every worker: the affinity the kernel reports (at start and in running tasks) is
// exactly the placed PU, and every task runs there. On a synthetic topology nothing may be
// bound: the threads keep the process's CPU set.
outcome check_n1(const run_params& p, bool faulty) {
    outcome o;
    const machine m = topo::load_machine(p.topology);
    if (faulty && !m.thissystem) {
        o.applicable = false;  // binding is skipped on a synthetic topology: nothing to break
        return o;
    }
    unsigned w = p.workers;
    if (w > eligible(m)) {
        if (!faulty) {
            o.applicable = false;  // more workers than PUs cannot be pinned (an error by design)
            return o;
        }
        w = eligible(m);
    }
    if (faulty && m.pus.size() < 2) {
        o.applicable = false;  // one PU: there is no wrong PU to bind to
        return o;
    }
    const std::vector<unsigned> process = os::this_thread_cpus();
    for (auto policy : {placement_policy::compact, placement_policy::scatter}) {
        config c = placed(p, policy, w);
        c.debug.bind_wrong_pu = faulty;
        runtime rt(c);
        const placement_report& r = rt.placement();
        ++o.runs;
        std::vector<std::vector<unsigned>> expect(r.workers.size());
        for (const worker_placement& wp : r.workers) {
            expect[wp.worker] =
                m.thissystem ? std::vector<unsigned>{static_cast<unsigned>(wp.pu)} : process;
            ++o.events;
            if (m.thissystem != wp.bound) {
                forbid(o, "worker " + std::to_string(wp.worker) +
                              (wp.bound ? " bound on a synthetic topology"
                                        : " not bound: " + wp.note));
            }
            if (wp.observed_cpus != expect[wp.worker]) {
                forbid(o, std::string(to_string(policy)) + ": worker " + std::to_string(wp.worker) +
                              " placed on PU " + std::to_string(wp.pu) + " saw affinity " +
                              cpus_text(wp.observed_cpus) + " at start");
            }
        }
        std::vector<sample> samples(p.quick ? 400 : 4000);
        rt.block_on(spread_samples(samples, 3));
        for (const sample& s : samples) {
            const int wi = s.worker.load(std::memory_order_acquire);
            if (wi < 0) continue;
            ++o.events;
            const auto& e = expect[static_cast<unsigned>(wi)];
            if (s.cpus != e ||
                std::find(e.begin(), e.end(), static_cast<unsigned>(s.cpu)) == e.end()) {
                forbid(o, std::string(to_string(policy)) + ": a task on worker " +
                              std::to_string(wi) + " ran on CPU " + std::to_string(s.cpu) +
                              " with affinity " + cpus_text(s.cpus) + ", placed on " +
                              cpus_text(e));
            }
        }
    }
    return o;
}

// ---- N2 -----------------------------------------------------------------------------------

// Checks one compact or scatter map against the machine: distinct eligible PUs; compact fills
// nodes in order; scatter keeps nodes and packages within one of each other unless the smaller
// one is full; both use every core of a node before any SMT sibling in it.
void check_map(const machine& m, const topology_options& o, const std::vector<unsigned>& pus_os,
               outcome& out) {
    const std::string what = std::string(to_string(o.policy)) +
                             (o.one_pu_per_core ? " (one PU per core)" : "") + " with " +
                             std::to_string(pus_os.size()) + " workers on " + m.source + ": ";
    std::map<unsigned, unsigned> index_of;  // os -> m.pus index
    for (unsigned i = 0; i < m.pus.size(); ++i) index_of[m.pus[i].os] = i;
    std::vector<unsigned> node_used(m.nodes.size(), 0), node_cap(m.nodes.size(), 0);
    std::vector<unsigned> pack_used(m.packages, 0), pack_cap(m.packages, 0);
    std::vector<unsigned> core_first(m.cores, 0), core_extra(m.cores, 0);
    for (const topo::pu_info& pu : m.pus) {
        if (o.one_pu_per_core && pu.sibling) continue;
        ++node_cap[pu.node];
        ++pack_cap[pu.package];
    }
    std::set<unsigned> seen;
    ++out.events;
    for (unsigned os : pus_os) {
        auto it = index_of.find(os);
        if (it == index_of.end() || !seen.insert(os).second) {
            forbid(out, what + "PU " + std::to_string(os) + " missing or used twice");
            return;
        }
        const topo::pu_info& pu = m.pus[it->second];
        if (o.one_pu_per_core && pu.sibling) forbid(out, what + "an SMT sibling was used");
        ++node_used[pu.node];
        ++pack_used[pu.package];
        ++(pu.sibling ? core_extra : core_first)[pu.core];
    }
    // Per node: a sibling only once every core of the node has a worker on its first PU.
    for (unsigned n = 0; n < m.nodes.size(); ++n) {
        bool extra = false, empty_core = false;
        for (unsigned i : m.nodes[n].pus) {
            const topo::pu_info& pu = m.pus[i];
            if (pu.sibling == 0 && !core_first[pu.core]) empty_core = true;
            if (core_extra[pu.core]) extra = true;
        }
        if (extra && empty_core) {
            forbid(out,
                   what + "node " + std::to_string(n) + " has an SMT sibling busy and a core idle");
        }
    }
    if (o.policy == placement_policy::compact) {
        for (unsigned n = 0; n + 1 < m.nodes.size(); ++n) {
            if (node_used[n + 1] && node_used[n] < node_cap[n]) {
                forbid(out, what + "node " + std::to_string(n + 1) + " used before node " +
                                std::to_string(n) + " is full");
            }
        }
        return;
    }
    auto balanced = [&](const std::vector<unsigned>& used, const std::vector<unsigned>& cap,
                        const char* level) {
        for (unsigned a = 0; a < used.size(); ++a) {
            for (unsigned b = 0; b < used.size(); ++b) {
                if (used[a] > used[b] + 1 && used[b] < cap[b]) {
                    forbid(out, what + level + " " + std::to_string(a) + " has " +
                                    std::to_string(used[a]) + " workers, " + level + " " +
                                    std::to_string(b) + " only " + std::to_string(used[b]));
                    return;
                }
            }
        }
    };
    balanced(node_used, node_cap, "node");
    balanced(pack_used, pack_cap, "package");
}

outcome check_n2(const run_params& p, bool faulty) {
    outcome o;
    const machine m = topo::load_machine(p.topology);
    if (faulty && m.nodes.size() < 2) {
        o.applicable = false;  // one node: ignoring nodes changes nothing
        return o;
    }
    config c = fresh(1);
    c.topology.source = p.topology;
    c.debug.scatter_ignores_nodes = faulty;
    for (auto policy : {placement_policy::compact, placement_policy::scatter}) {
        for (bool one : {false, true}) {
            c.topology.policy = policy;
            c.topology.one_pu_per_core = one;
            const unsigned top = std::min(eligible(m, one), config::max_workers);
            for (unsigned w = 1; w <= top; ++w) {
                const placement_report r = plan_placement(c, w);
                std::vector<unsigned> pus;
                for (const worker_placement& wp : r.workers)
                    pus.push_back(static_cast<unsigned>(wp.pu));
                check_map(m, c.topology, pus, o);
                ++o.runs;
            }
        }
    }
    // An explicit list is taken as given.
    detail::fast_rng rng(p.seed);
    config l = fresh(0);
    l.topology.source = p.topology;
    l.topology.policy = placement_policy::list;
    std::vector<unsigned> all;
    for (const auto& pu : m.pus) all.push_back(pu.os);
    for (int round = 0; round < 20; ++round) {
        for (std::size_t i = all.size(); i > 1; --i)
            std::swap(all[i - 1], all[rng.bounded(static_cast<std::uint32_t>(i))]);
        l.topology.pus.assign(all.begin(),
                              all.begin() + std::min<std::size_t>(all.size(), 1 + round % 8));
        const placement_report r = plan_placement(l);
        ++o.events;
        for (const worker_placement& wp : r.workers) {
            if (wp.pu != static_cast<int>(l.topology.pus[wp.worker])) {
                forbid(o, "list: worker " + std::to_string(wp.worker) + " got PU " +
                              std::to_string(wp.pu) + ", asked for " +
                              std::to_string(l.topology.pus[wp.worker]));
            }
        }
    }
    return o;
}

// ---- N3 -----------------------------------------------------------------------------------

// Each worker's state is requested on its own node; on a real machine with several nodes the
// kernel must report the page there; on one node or a synthetic topology no request is made.
outcome check_n3(const run_params& p, bool faulty) {
    outcome o;
    const machine m = topo::load_machine(p.topology);
    const unsigned nodes = static_cast<unsigned>(m.nodes.size());
    const unsigned w = std::min(std::max(p.workers, nodes), std::min(eligible(m), 16u));
    config c = placed(p, placement_policy::scatter, w);
    c.debug.memory_on_node0 = faulty;
    runtime rt(c);
    const placement_report& r = rt.placement();
    ++o.runs;
    const bool several = m.thissystem && nodes > 1 && os::kernel_numa_nodes() > 1;
    bool off_node0 = false;
    for (const worker_placement& wp : r.workers) {
        ++o.events;
        off_node0 = off_node0 || wp.node != 0;
        const std::string who =
            "worker " + std::to_string(wp.worker) + " (node " + std::to_string(wp.node) + ")";
        if (wp.memory_node != wp.node) {
            forbid(o, who + ": state requested on node " + std::to_string(wp.memory_node));
        }
        if (several) {
            const int kernel = static_cast<int>(m.nodes[static_cast<unsigned>(wp.node)].os);
            if (!wp.memory_bound || wp.memory_node_observed != kernel) {
                forbid(o, who + ": the kernel reports its state on node " +
                              std::to_string(wp.memory_node_observed));
            }
        } else if (wp.memory_bound) {
            forbid(o,
                   who + ": a node request was made on " +
                       (m.thissystem ? std::string("a one-node machine") : "a synthetic topology"));
        }
    }
    if (m.thissystem && !several)
        o.note = "one NUMA node: nothing to place, kernel reports node " +
                 std::to_string(r.workers[0].memory_node_observed);
    if (faulty && !off_node0) o.applicable = false;  // every worker is on node 0 anyway
    return o;
}

// ---- N4 -----------------------------------------------------------------------------------

// Replays every NUMA-aware victim walk from its steal_attempt events: a victim may be tried only
// after every nearer one (own node, then own package), each victim at most once, never itself.
outcome check_n4(const run_params& p, bool faulty) {
    outcome o;
    const machine m = topo::load_machine(p.topology);
    const unsigned nodes = static_cast<unsigned>(m.nodes.size());
    unsigned w = m.thissystem ? p.workers : std::max(p.workers, 2 * nodes);
    w = std::min(w, std::min(eligible(m), 16u));
    if (w < 2) {
        o.applicable = false;
        return o;
    }
    config c = probed(w);
    c.topology.source = p.topology;
    c.topology.policy = placement_policy::scatter;
    c.topology.numa_stealing = true;
    c.debug.steal_ignores_nodes = faulty;
    runtime rt(c);
    std::vector<topo::worker_site> site;
    for (const worker_placement& wp : rt.placement().workers) {
        site.push_back(
            topo::worker_site{static_cast<unsigned>(wp.node), static_cast<unsigned>(wp.package)});
    }
    // The control needs a thief with both a same-node victim and a farther one.
    bool mixed = false;
    for (unsigned t = 0; t < w; ++t) {
        const topo::victim_tiers tiers = topo::tiers_for(site, t);
        mixed = mixed || (tiers.end[0] > 0 && tiers.end[2] > tiers.end[0]);
    }
    const unsigned rounds = p.quick ? 30 : 200;
    for (unsigned r = 0; r < rounds; ++r) {
        rt.block_on(workloads::tree(3, 12));
        ++o.runs;
    }
    std::vector<unsigned> walk;
    std::uint64_t walks = 0, remote_steps = 0;
    unsigned stream = UINT_MAX;  // whose events these are: a walk never spans two workers
    visit_events(rt, o, [&](const probe_event& e) {
        if (e.worker != stream) {
            // The previous worker's stream may end inside a walk (a worker still searching when
            // the probes were taken); its partial walk says nothing about this worker's.
            walk.clear();
            stream = e.worker;
        }
        if (e.kind == probe_kind::steal_walk) {
            walk.clear();
            ++walks;
            return;
        }
        if (e.kind != probe_kind::steal_attempt) return;
        ++o.events;
        const unsigned thief = e.worker, victim = e.a;
        if (victim == thief || victim >= w ||
            std::find(walk.begin(), walk.end(), victim) != walk.end()) {
            forbid(o, "worker " + std::to_string(thief) + " tried victim " +
                          std::to_string(victim) + " twice or itself in one walk");
        }
        const auto d = topo::distance_between(site[thief], site[victim]);
        if (d != topo::distance::same_node) ++remote_steps;
        for (unsigned v = 0; v < w; ++v) {
            if (v == thief || v == victim) continue;
            if (topo::distance_between(site[thief], site[v]) < d &&
                std::find(walk.begin(), walk.end(), v) == walk.end()) {
                forbid(o, "worker " + std::to_string(thief) + " (node " +
                              std::to_string(site[thief].node) + ") tried victim " +
                              std::to_string(victim) + " (node " +
                              std::to_string(site[victim].node) + ") before nearer victim " +
                              std::to_string(v) + " (node " + std::to_string(site[v].node) + ")");
                break;
            }
        }
        walk.push_back(victim);
    });
    const runtime_metrics mt = rt.metrics();
    const std::uint64_t near = mt.total(&worker_metrics::steals_same_node),
                        pack = mt.total(&worker_metrics::steals_same_package),
                        far = mt.total(&worker_metrics::steals_remote);
    if (near + pack + far != mt.total(&worker_metrics::steal_ops)) {
        forbid(o, "steals by distance do not add up to the steal count");
    }
    o.note = std::to_string(walks) + " walks, " + std::to_string(remote_steps) +
             " off-node attempts; steals same node/package/remote " + std::to_string(near) + "/" +
             std::to_string(pack) + "/" + std::to_string(far);
    if (faulty && !mixed) o.applicable = false;
    return o;
}

}  // namespace

std::vector<checker> topo_checkers() {
    return {
        {"N1", "pinned workers run only on their placed PU (affinity read inside each worker)",
         "bind each worker to the PU after its own (bind_wrong_pu)", check_n1, true},
        {"N2",
         "compact fills nodes in order, scatter balances nodes and packages, cores before SMT",
         "scatter ignores NUMA nodes (scatter_ignores_nodes)", check_n2, true},
        {"N3", "worker state (ring included) is allocated on the worker's NUMA node",
         "request every worker's state on node 0 (memory_on_node0)", check_n3, true},
        {"N4", "NUMA-aware thieves try every same-node victim before any farther one",
         "walk victims in one random order (steal_ignores_nodes)", check_n4, true},
    };
}

}  // namespace blitz::conformance
