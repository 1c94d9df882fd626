// SPDX-License-Identifier: MIT
#pragma once
// plan: everything the scheduler needs to place its workers, computed before any thread starts.

#include <vector>

#include "blitz/config.hpp"
#include "blitz/topology.hpp"
#include "topo/placement.hpp"

namespace blitz::detail::topo {

// Invariants: report.workers, bind_cpu, memory_kernel_node and sites all have one entry per
// worker; with policy none every bind_cpu and memory_kernel_node is -1 and sites are all zero.
struct plan {
    placement_report report;    // binding and observed fields are filled in by the scheduler
    std::vector<int> bind_cpu;  // OS CPU each worker binds to, -1: no binding
    std::vector<int> memory_kernel_node;  // kernel node for each worker's state, -1: default
    std::vector<worker_site> sites;       // node and package per worker (victim tiers)
    bool placed = false;                  // a placement policy is in force
};

// Loads the topology and places the workers. `workers` overrides cfg.workers when non-zero.
// With policy none and no topology source the machine is not inspected unless `inspect`.
// Throws topology_error (bad input, impossible placement).
plan make_plan(const config& cfg, unsigned workers = 0, bool inspect = false);

}  // namespace blitz::detail::topo
