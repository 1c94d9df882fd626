// SPDX-License-Identifier: MIT
// B2: awaits on always-ready resources count against a per-poll budget, so a task looping on
// them cannot keep its worker from the other tasks (scenario in conformance/scenarios.hpp).

#include <gtest/gtest.h>

#include "blitz_testing/scenarios.hpp"

namespace blitz {
namespace {

using workloads::longest_starvation;

TEST(Coop, AlwaysReadyMutexYieldsWithinTheBudget) {
    EXPECT_LE(longest_starvation(128, 0), 128);
    EXPECT_EQ(longest_starvation(0, 0), 5000);  // budget off: the hog keeps the worker
}

TEST(Coop, AlwaysReadyChannelYieldsWithinTheBudget) {
    EXPECT_LE(longest_starvation(128, 1), 64);  // two ready awaits per step
    EXPECT_EQ(longest_starvation(0, 1), 5000);
}

TEST(Coop, BudgetIsConfigurable) { EXPECT_LE(longest_starvation(16, 0), 16); }

}  // namespace
}  // namespace blitz
