// SPDX-License-Identifier: MIT
// Topology loading, placement maps, victim tiers and pinned runtimes (issue 5, N1-N4).

#include <gtest/gtest.h>
#include <hwloc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "base/os.hpp"
#include "blitz/blitz.hpp"
#include "topo/machine.hpp"
#include "topo/placement.hpp"
#include "topo/plan.hpp"

namespace blitz::detail::topo {
namespace {

const char* const two_by_two = "pack:2 numa:2 core:8 pu:2";
const char* const four_nodes = "pack:1 numa:4 core:16 pu:1";

topology_options opts(placement_policy p, bool one_per_core = false) {
    topology_options o;
    o.policy = p;
    o.one_pu_per_core = one_per_core;
    return o;
}

std::string temp_file(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream(path) << text;
    return path;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const topology_error& e) {
        return e.what();
    }
    return "(no topology_error)";
}

TEST(TopoLoad, SyntheticShapesHaveTheirCounts) {
    const machine a = load_machine(two_by_two);
    EXPECT_FALSE(a.thissystem);
    EXPECT_EQ(a.packages, 2u);
    EXPECT_EQ(a.nodes.size(), 4u);
    EXPECT_EQ(a.cores, 32u);
    EXPECT_EQ(a.pus.size(), 64u);
    for (unsigned n = 0; n < 4; ++n) {
        EXPECT_EQ(a.nodes[n].package, n / 2);
        EXPECT_EQ(a.nodes[n].pus.size(), 16u);
    }
    // PU 17: node 1 (second node of package 0), core 8, second hardware thread.
    EXPECT_EQ(a.pus[17].node, 1u);
    EXPECT_EQ(a.pus[17].core, 8u);
    EXPECT_EQ(a.pus[17].sibling, 1u);
    EXPECT_EQ(a.pus[17].package, 0u);

    const machine b = load_machine(four_nodes);
    EXPECT_EQ(b.packages, 1u);
    EXPECT_EQ(b.nodes.size(), 4u);
    EXPECT_EQ(b.cores, 64u);
    EXPECT_EQ(b.pus.size(), 64u);
}

TEST(TopoLoad, ThisMachineIsThisSystem) {
    const machine m = load_machine("");
    EXPECT_TRUE(m.thissystem);
    EXPECT_GE(m.pus.size(), 1u);
    EXPECT_GE(m.nodes.size(), 1u);
    std::size_t listed = 0;
    for (const node_info& n : m.nodes) listed += n.pus.size();
    EXPECT_EQ(listed, m.pus.size());  // every PU in exactly one node
}

TEST(TopoLoad, BadInputIsAClearError) {
    EXPECT_NE(error_of([] { load_machine("pack:2 bogus:3"); }).find("pack:2 bogus:3"),
              std::string::npos);
    const std::string missing = ::testing::TempDir() + "no-such-topology.xml";
    const std::string e = error_of([&] { load_machine(missing); });
    EXPECT_NE(e.find("cannot read topology XML file"), std::string::npos) << e;
    EXPECT_NE(e.find(missing), std::string::npos) << e;
    const std::string junk = temp_file("junk.xml", "this is not xml\n");
    EXPECT_NE(error_of([&] { load_machine(junk); }).find(junk), std::string::npos);
    const std::string bad_synth = temp_file("bad.synth", "pack:two\n");
    EXPECT_NE(error_of([&] { load_machine(bad_synth); }).find("pack:two"), std::string::npos);
}

TEST(TopoLoad, SynthFileAndXmlExportRoundTrip) {
    const std::string synth = temp_file("shape.synth", std::string(two_by_two) + "\n");
    const machine s = load_machine(synth);
    EXPECT_EQ(s.pus.size(), 64u);
    EXPECT_NE(s.source.find(synth), std::string::npos);

    // An hwloc XML export of the same shape loads back identically, as not-this-system.
    hwloc_topology_t t;
    ASSERT_EQ(hwloc_topology_init(&t), 0);
    ASSERT_EQ(hwloc_topology_set_synthetic(t, two_by_two), 0);
    ASSERT_EQ(hwloc_topology_load(t), 0);
    const std::string xml = ::testing::TempDir() + "shape.xml";
    ASSERT_EQ(hwloc_topology_export_xml(t, xml.c_str(), 0), 0);
    hwloc_topology_destroy(t);
    const machine x = load_machine(xml);
    EXPECT_FALSE(x.thissystem);
    EXPECT_EQ(x.pus.size(), 64u);
    EXPECT_EQ(x.nodes.size(), 4u);
    EXPECT_EQ(x.cores, 32u);
    EXPECT_EQ(x.packages, 2u);
}

TEST(TopoPlace, CompactFillsANodeCoresFirstThenSiblings) {
    const machine m = load_machine(two_by_two);
    const auto w = place_workers(m, opts(placement_policy::compact), 20);
    // Node 0's 8 cores (first PUs 0,2,..,14), then their siblings (1,3,..,15), then node 1.
    for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(m.pus[w[i]].os, 2 * i);
    for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(m.pus[w[8 + i]].os, 2 * i + 1);
    EXPECT_EQ(m.pus[w[16]].os, 16u);
    EXPECT_EQ(m.pus[w[16]].node, 1u);

    const auto c = place_workers(m, opts(placement_policy::compact, true), 10);
    for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(m.pus[c[i]].os, 2 * i);
    EXPECT_EQ(m.pus[c[8]].os, 16u);  // one PU per core: node 1 before any sibling
}

TEST(TopoPlace, ScatterAlternatesPackagesAndBalancesNodes) {
    const machine m = load_machine(two_by_two);
    const auto w = place_workers(m, opts(placement_policy::scatter), 6);
    // Nodes visited 0 (P0), 2 (P1), 1 (P0), 3 (P1), then around again on the next core.
    const unsigned expect[] = {0, 32, 16, 48, 2, 34};
    for (unsigned i = 0; i < 6; ++i) EXPECT_EQ(m.pus[w[i]].os, expect[i]) << "worker " << i;

    for (unsigned n = 1; n <= 64; ++n) {
        const auto p = place_workers(m, opts(placement_policy::scatter), n);
        std::map<unsigned, unsigned> per_node, per_package;
        std::set<unsigned> seen;
        for (unsigned i : p) {
            ++per_node[m.pus[i].node];
            ++per_package[m.pus[i].package];
            EXPECT_TRUE(seen.insert(i).second) << "PU used twice with " << n << " workers";
        }
        unsigned lo = 64, hi = 0;
        for (unsigned k = 0; k < 4; ++k) {
            lo = std::min(lo, per_node[k]);
            hi = std::max(hi, per_node[k]);
        }
        EXPECT_LE(hi - lo, 1u) << n << " workers";
        EXPECT_LE(
            std::max(per_package[0], per_package[1]) - std::min(per_package[0], per_package[1]),
            1u);
    }
}

TEST(TopoPlace, ScatterSkipsFullNodesOnUnevenMachines) {
    // Node 0 has 2 cores, node 1 has 4: with 6 workers node 0 fills up and node 1 takes the rest.
    machine m;
    m.source = "uneven";
    m.cores = 6;
    m.nodes.resize(2);
    for (unsigned i = 0; i < 6; ++i) {
        const unsigned node = i < 2 ? 0 : 1;
        m.nodes[node].pus.push_back(i);
        m.pus.push_back(pu_info{i, i, node, 0, 0});
    }
    const auto w = place_workers(m, opts(placement_policy::scatter), 6);
    std::map<unsigned, unsigned> per_node;
    for (unsigned i : w) ++per_node[m.pus[i].node];
    EXPECT_EQ(per_node[0], 2u);
    EXPECT_EQ(per_node[1], 4u);
    const auto three = place_workers(m, opts(placement_policy::scatter), 3);
    EXPECT_EQ(m.pus[three[0]].node, 0u);
    EXPECT_EQ(m.pus[three[1]].node, 1u);
    EXPECT_EQ(m.pus[three[2]].node, 0u);
}

TEST(TopoPlace, ImpossiblePlacementsNameTheInput) {
    const machine m = load_machine(four_nodes);
    EXPECT_NE(error_of([&] {
                  place_workers(m, opts(placement_policy::compact), 65);
              }).find("65 pinned workers but only 64 PUs"),
              std::string::npos);
    const machine s = load_machine(two_by_two);
    EXPECT_NE(error_of([&] {
                  place_workers(s, opts(placement_policy::scatter, true), 33);
              }).find("32 cores (one PU per core)"),
              std::string::npos);
    topology_options l = opts(placement_policy::list);
    l.pus = {3, 99};
    const std::string e = error_of([&] { place_workers(m, l, 2); });
    EXPECT_NE(e.find("PU 99 (worker 1) does not exist"), std::string::npos) << e;
    l.pus = {3, 3};
    EXPECT_NE(error_of([&] { place_workers(m, l, 2); }).find("more than one worker"),
              std::string::npos);
    l.pus = {5, 7};
    const auto ok = place_workers(m, l, 2);
    EXPECT_EQ(m.pus[ok[0]].os, 5u);
    EXPECT_EQ(m.pus[ok[1]].os, 7u);
}

TEST(TopoPlace, ScatterFaultClustersOnTheFirstNode) {
    const machine m = load_machine(four_nodes);
    const auto w = place_workers(m, opts(placement_policy::scatter), 4, /*fault=*/true);
    for (unsigned i : w) EXPECT_EQ(m.pus[i].node, 0u);  // what N2's control must catch
}

TEST(TopoTiers, OwnNodeThenPackageThenTheRest) {
    // 8 workers: two per node on 2 packages x 2 nodes.
    std::vector<worker_site> s;
    for (unsigned i = 0; i < 8; ++i) s.push_back(worker_site{i / 2, i / 4});
    const victim_tiers t = tiers_for(s, 5);
    EXPECT_EQ(t.end[0], 1u);
    EXPECT_EQ(t.end[1], 3u);
    EXPECT_EQ(t.end[2], 7u);
    EXPECT_EQ(t.victims[0], 4u);
    EXPECT_EQ(std::vector<unsigned>(t.victims.begin() + 1, t.victims.begin() + 3),
              (std::vector<unsigned>{6, 7}));
    EXPECT_EQ(std::vector<unsigned>(t.victims.begin() + 3, t.victims.end()),
              (std::vector<unsigned>{0, 1, 2, 3}));
    const victim_tiers flat = tiers_for(s, 5, true);
    EXPECT_EQ(flat.end[0], 7u);
    EXPECT_EQ(flat.end[2], 7u);
}

TEST(TopoConfig, ValidationNamesTheField) {
    config c;
    c.topology.numa_stealing = true;
    EXPECT_THROW(c.validate(), config_error);
    c = config{};
    c.topology.policy = placement_policy::list;
    EXPECT_THROW(c.validate(), config_error);
    c.topology.pus = {0};
    c.workers = 2;
    EXPECT_THROW(c.validate(), config_error);
    c = config{};
    c.topology.pus = {0};
    EXPECT_THROW(c.validate(), config_error);
    EXPECT_EQ(parse_placement_policy("scatter"), placement_policy::scatter);
    EXPECT_THROW(parse_placement_policy("spread"), config_error);
}

// ---- runtimes -----------------------------------------------------------------------------

task<int> where_am_i() { co_return os::current_cpu(); }

TEST(TopoRuntime, PinnedWorkersRunOnlyOnTheirPu) {
    const unsigned pus = static_cast<unsigned>(load_machine("").pus.size());
    for (auto policy : {placement_policy::compact, placement_policy::scatter}) {
        config c;
        c.topology.policy = policy;
        c.workers = std::min(pus, 2u);
        runtime rt(c);
        const placement_report& r = rt.placement();
        ASSERT_EQ(r.workers.size(), c.workers);
        std::set<int> used;
        for (const worker_placement& w : r.workers) {
            EXPECT_TRUE(w.bound) << w.note;
            EXPECT_EQ(w.observed_cpus, std::vector<unsigned>{static_cast<unsigned>(w.pu)});
            EXPECT_TRUE(used.insert(w.pu).second);
            EXPECT_GE(w.memory_node_observed, 0);  // the kernel knows where the state lives
        }
        std::set<int> allowed(used);
        for (int i = 0; i < 200; ++i) {
            const int cpu = rt.block_on(where_am_i());
            EXPECT_TRUE(allowed.count(cpu)) << "task ran on CPU " << cpu;
        }
        EXPECT_NE(r.summary().find("bound"), std::string::npos) << r.summary();
    }
}

TEST(TopoRuntime, WorkersDefaultToOnePerEligiblePu) {
    config c;
    c.topology.policy = placement_policy::compact;
    runtime rt(c);
    EXPECT_EQ(rt.num_workers(), load_machine("").pus.size());
}

TEST(TopoRuntime, PlacementStaysInsideTheCallersCpuSet) {
    // Like `taskset -c <last CPU> app`: compact may only use the CPUs the process was given.
    const std::vector<unsigned> all = os::this_thread_cpus();
    if (all.size() < 2) GTEST_SKIP() << "needs two CPUs";
    ASSERT_EQ(os::set_this_thread_cpus({all.back()}), "");
    {
        config c;
        c.topology.policy = placement_policy::compact;
        runtime rt(c);
        ASSERT_EQ(rt.num_workers(), 1u);
        EXPECT_EQ(rt.placement().workers[0].pu, static_cast<int>(all.back()));
        EXPECT_EQ(rt.placement().pus, 1u);
        c.workers = 2;
        EXPECT_THROW(runtime again(c), topology_error);
    }
    ASSERT_EQ(os::set_this_thread_cpus(all), "");
}

TEST(TopoRuntime, TooManyPinnedWorkersIsAnError) {
    config c;
    c.topology.policy = placement_policy::compact;
    c.workers = static_cast<unsigned>(load_machine("").pus.size()) + 1;
    EXPECT_THROW(runtime rt(c), topology_error);
}

// 8 workers scattered over the 2 x 2 shape with NUMA-aware stealing.
config numa_scatter_on_two_by_two() {
    config c;
    c.topology.source = two_by_two;
    c.topology.policy = placement_policy::scatter;
    c.topology.numa_stealing = true;
    c.workers = 8;
    return c;
}

TEST(TopoRuntime, SyntheticTopologyPlansButBindsNothing) {
    runtime rt(numa_scatter_on_two_by_two());
    const placement_report& r = rt.placement();
    EXPECT_TRUE(r.synthetic);
    const std::vector<unsigned> process = os::this_thread_cpus();
    for (const worker_placement& w : r.workers) {
        EXPECT_FALSE(w.bound);
        EXPECT_FALSE(w.memory_bound);
        EXPECT_EQ(w.memory_node, w.node);     // decided, not applied
        EXPECT_EQ(w.observed_cpus, process);  // the thread was left alone
    }
    EXPECT_EQ(rt.block_on(where_am_i()) >= 0, true);
}

task<void> spin_spawner(unsigned n, std::atomic<unsigned>& done) {
    for (unsigned i = 0; i < n; ++i) {
        spawn([](std::atomic<unsigned>& d) -> task<void> {
            volatile unsigned x = 0;
            for (unsigned k = 0; k < 2000; ++k) x = x + k;
            d.fetch_add(1, std::memory_order_relaxed);
            co_return;
        }(done))
            .detach();
    }
    co_return;
}

TEST(TopoRuntime, StealsAreCountedByDistance) {
    runtime rt(numa_scatter_on_two_by_two());
    std::atomic<unsigned> done{0};
    for (int round = 0; round < 50; ++round) rt.block_on(spin_spawner(200, done));
    while (done.load() < 50u * 200) std::this_thread::yield();
    const runtime_metrics m = rt.metrics();
    const auto by_distance = m.total(&worker_metrics::steals_same_node) +
                             m.total(&worker_metrics::steals_same_package) +
                             m.total(&worker_metrics::steals_remote);
    EXPECT_EQ(by_distance, m.total(&worker_metrics::steal_ops));
}

TEST(TopoRuntime, BindFailureNamesWorkerAndPu) {
    // hwloc treats a synthetic topology as this machine when HWLOC_THISSYSTEM=1: its PU 3 does
    // not exist here (unless this machine has 4 CPUs), so binding fails for real.
    if (load_machine("").pus.size() >= 64)
        GTEST_SKIP() << "needs a machine with fewer than 64 CPUs";
    setenv("HWLOC_THISSYSTEM", "1", 1);
    config c;
    c.topology.source = "pack:1 core:64 pu:1";
    c.topology.policy = placement_policy::list;
    c.topology.pus = {63};
    const std::string e = error_of([&] { runtime rt(c); });
    EXPECT_NE(e.find("worker 0: cannot bind to PU 63"), std::string::npos) << e;

    c.topology.best_effort = true;
    runtime rt(c);
    EXPECT_FALSE(rt.placement().workers[0].bound);
    EXPECT_NE(rt.placement().workers[0].note.find("PU 63"), std::string::npos);
    EXPECT_EQ(rt.block_on(where_am_i()) >= 0, true);  // it still runs, unbound
    unsetenv("HWLOC_THISSYSTEM");
}

TEST(TopoRuntime, WrongPuFaultKeepsTheMapButBindsElsewhere) {
    if (load_machine("").pus.size() < 2) GTEST_SKIP() << "needs two PUs";
    config c;
    c.topology.policy = placement_policy::compact;
    c.workers = 1;
    c.debug.bind_wrong_pu = true;
    runtime rt(c);
    const worker_placement& w = rt.placement().workers[0];
    ASSERT_EQ(w.observed_cpus.size(), 1u);
    EXPECT_NE(static_cast<int>(w.observed_cpus[0]), w.pu);  // what N1's control must catch
}

}  // namespace
}  // namespace blitz::detail::topo
