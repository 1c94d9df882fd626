// SPDX-License-Identifier: MIT
#pragma once
// `blitz compare A.json B.json`: per-row ratios of two benchmark reports with a significance
// test (report/compare.hpp does the work).

#include "args.hpp"

namespace blitz::cli {

int compare_main(args& a);

}  // namespace blitz::cli
