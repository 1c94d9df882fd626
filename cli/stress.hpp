// SPDX-License-Identifier: MIT
#pragma once
// `blitz stress`: the randomized mixed workload (stress/mix/) with its summary table.

#include "args.hpp"

namespace blitz::cli {

int stress_main(args& a);

}  // namespace blitz::cli
