// SPDX-License-Identifier: MIT
#pragma once
// The runtime's statics a model's code touches (the allocation statistics, the fault-injection
// switches) are made before an exploration, so they stay plain objects outside the model: made
// inside one execution they would be modelled in it and plain in the next, and the explorer
// would see a model that is not deterministic.

#include "blitz/testing/fault_injection.hpp"
#include "task/alloc_stats.hpp"

namespace blitz::model {

inline void make_runtime_statics() {
    (void)detail::alloc_stats::mine();
    (void)detail::alloc_stats::read();
    testing::clear_failures();
}

}  // namespace blitz::model
