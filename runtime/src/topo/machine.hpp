// SPDX-License-Identifier: MIT
#pragma once
// machine: a plain description of a topology (packages, NUMA nodes, cores, PUs, distances),
// loaded once with hwloc so that placement and victim order are pure functions over it.

#include <string>
#include <vector>

namespace blitz::detail::topo {

struct pu_info {
    unsigned os = 0;       // operating-system index (what sched_setaffinity takes)
    unsigned core = 0;     // dense core index, in topology order
    unsigned node = 0;     // dense NUMA node index (machine::nodes)
    unsigned package = 0;  // dense package index
    unsigned sibling = 0;  // rank among the PUs of its core (0 for the first hardware thread)
};

struct node_info {
    unsigned os = 0;
    unsigned package = 0;
    std::vector<unsigned> pus;  // indexes into machine::pus, in topology order
};

// Invariants: pus are in hwloc's logical order; every pu's node, core and package index is in
// range; nodes lists only nodes that hold PUs and every PU appears in exactly one node.
struct machine {
    std::string source;       // "this machine", the synthetic string or the file name
    bool thissystem = false;  // false: synthetic or foreign XML; nothing may be bound
    unsigned packages = 1;
    unsigned cores = 0;
    std::vector<pu_info> pus;
    std::vector<node_info> nodes;
    std::vector<unsigned long long> distances;  // nodes x nodes latency matrix, or empty
};

// Loads `source` (empty: this machine, limited to the PUs in the calling thread's CPU set; *.xml:
// an hwloc XML export; *.synth: a file holding a synthetic string; anything else: a synthetic
// string). Throws topology_error naming the input.
machine load_machine(const std::string& source);

// Builds a machine from explicit counts, for tests: `packages` x `nodes_per_package` x
// `cores_per_node` x `pus_per_core`, numbered in order.
machine uniform_machine(unsigned packages, unsigned nodes_per_package, unsigned cores_per_node,
                        unsigned pus_per_core);

}  // namespace blitz::detail::topo
