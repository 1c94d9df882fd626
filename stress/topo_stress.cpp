// SPDX-License-Identifier: MIT
// Placement under stress: NUMA-aware stealing on synthetic shapes (16 workers on the machine's
// real cores, so thieves race constantly) and pinned workers on this machine. Every task runs
// exactly once and nothing is left at shutdown, whichever tier a thief takes it from.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "blitz/blitz.hpp"
#include "blitz_testing/workloads.hpp"
#include "stress_scale.hpp"
#include "topo/machine.hpp"

namespace blitz {
namespace {

struct shape {
    const char* source;
    placement_policy policy;
    unsigned workers;
};

void PrintTo(const shape& s, std::ostream* os) {
    *os << (s.source[0] ? s.source : "this machine") << ", " << to_string(s.policy) << ", "
        << s.workers << " workers";
}

class ByShape : public ::testing::TestWithParam<shape> {};

TEST_P(ByShape, TreesRunExactlyOnceWithNumaStealing) {
    const shape s = GetParam();
    config c;
    c.topology.source = s.source;
    c.topology.policy = s.policy;
    c.topology.numa_stealing = true;
    c.workers = s.workers;
    const unsigned long rounds = 20 * stress::scale();
    for (unsigned long r = 0; r < rounds; ++r) {
        runtime rt(c);
        EXPECT_EQ(rt.block_on(workloads::tree(4, 6)), 1u + 6 + 36 + 216 + 1296);
        EXPECT_EQ(rt.block_on(workloads::fan_out(5000)), 5000ul * 4999 / 2);
        const runtime_metrics m = rt.metrics();
        EXPECT_EQ(m.total(&worker_metrics::steals_same_node) +
                      m.total(&worker_metrics::steals_same_package) +
                      m.total(&worker_metrics::steals_remote),
                  m.total(&worker_metrics::steal_ops));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ByShape,
    ::testing::Values(shape{"pack:2 numa:2 core:8 pu:2", placement_policy::scatter, 16},
                      shape{"pack:2 numa:2 core:8 pu:2", placement_policy::compact, 16},
                      shape{"pack:1 numa:4 core:16 pu:1", placement_policy::scatter, 8},
                      shape{"", placement_policy::compact, 0}),
    [](const ::testing::TestParamInfo<shape>& i) {
        const std::string where = i.param.source[0] ? "synthetic" : "this_machine";
        return where + std::to_string(i.index) + "_" + to_string(i.param.policy) + "_" +
               std::to_string(i.param.workers) + "w";
    });

TEST(PinnedStress, RepeatedPinnedRuntimesBindAndShutDownCleanly) {
    const unsigned pus = static_cast<unsigned>(detail::topo::load_machine("").pus.size());
    for (unsigned long r = 0; r < 30 * stress::scale(); ++r) {
        config c;
        c.topology.policy = r % 2 ? placement_policy::scatter : placement_policy::compact;
        c.workers = 1 + static_cast<unsigned>(r % std::min(pus, 4u));
        runtime rt(c);
        for (const worker_placement& w : rt.placement().workers) ASSERT_TRUE(w.bound) << w.note;
        EXPECT_EQ(rt.block_on(workloads::fan_out(2000)), 2000ul * 1999 / 2);
    }
}

}  // namespace
}  // namespace blitz
