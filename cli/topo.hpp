// SPDX-License-Identifier: MIT
#pragma once
// `blitz topo`: the machine (or a synthetic topology) and the worker -> PU -> core -> node map.

#include "blitz/config.hpp"

namespace blitz::cli {

struct topo_options {
    topology_options topology;  // policy defaults to compact for this command
    unsigned workers = 0;       // 0: one per eligible PU
    io_mode_kind io_mode = io_mode_kind::shared;
    int sqpoll_cpu = -1;
};

int run_topo(const topo_options& o);

// Comma list of unsigned integers ("0,2,4"), for --pus. Throws std::invalid_argument.
std::vector<unsigned> parse_pu_list(const std::string& flag, const std::string& v);

}  // namespace blitz::cli
