// SPDX-License-Identifier: MIT
#pragma once
// Placement: which PU each worker gets (N2), and the order in which a thief visits victims (N4).
// Pure functions over a machine description, so synthetic shapes test them exactly.

#include <cstdint>
#include <vector>

#include "blitz/config.hpp"
#include "sched/victim_tiers.hpp"
#include "topo/machine.hpp"

namespace blitz::detail::topo {

// The PUs compact and scatter may use, as indexes into m.pus: all of them, or the first PU of
// each core with one_pu_per_core.
std::vector<unsigned> eligible_pus(const machine& m, bool one_pu_per_core);

// For each of `workers` workers, the index into m.pus of its PU under o.policy (which must not
// be none). Throws topology_error for more workers than eligible PUs, an explicit PU that does
// not exist, a repeated explicit PU or a list whose length differs from `workers`.
// `fault_scatter_ignores_nodes` is N2's negative control.
std::vector<unsigned> place_workers(const machine& m, const topology_options& o, unsigned workers,
                                    bool fault_scatter_ignores_nodes = false);

// How far a victim is from a thief, for the steal counters and the NUMA-aware walk.
enum class distance : std::uint8_t { same_node = 0, same_package = 1, remote = 2 };

struct worker_site {
    unsigned node = 0, package = 0;
};

// Worker `self`'s victims in tiers by distance (sched/victim_tiers.hpp). `flat` puts everyone
// in one tier (N4's negative control).
using detail::victim_tiers;
victim_tiers tiers_for(const std::vector<worker_site>& sites, unsigned self, bool flat = false);

inline distance distance_between(const worker_site& a, const worker_site& b) noexcept {
    if (a.node == b.node) return distance::same_node;
    return a.package == b.package ? distance::same_package : distance::remote;
}

}  // namespace blitz::detail::topo
