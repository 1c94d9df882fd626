// SPDX-License-Identifier: MIT
#pragma once
// `blitz report`: the whole results folder (every machine's tables and plots) as one static
// HTML page that can be published as is.

#include "args.hpp"

namespace blitz::cli {

int report_main(args& a);

}  // namespace blitz::cli
