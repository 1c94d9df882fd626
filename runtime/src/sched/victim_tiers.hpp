// SPDX-License-Identifier: MIT
#pragma once
// victim_tiers: the order in which a thief visits its victims when stealing is NUMA-aware (N4).
// The scheduler walks it; topo/ computes it from the machine (topo::tiers_for).

#include <vector>

namespace blitz::detail {

// A thief's victims grouped by distance: victims[0, end[0]) share its node, [end[0], end[1])
// its package, [end[1], end[2]) are the rest. Within a tier, workers are in index order (the
// walk picks a random start in each tier).
struct victim_tiers {
    std::vector<unsigned> victims;
    unsigned end[3] = {0, 0, 0};
};

}  // namespace blitz::detail
