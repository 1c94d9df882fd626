// SPDX-License-Identifier: MIT
#pragma once
// `blitz top`: a live view of a running blitz program through its inspect socket
// (config::inspect_socket, issue 46): workers, queues, stalls, histograms, and the oldest and
// busiest tasks with what they wait on.

#include <string>

namespace blitz::cli {

struct top_options {
    std::string attach;           // a PID (its "auto" socket) or a socket path
    bool demo = false;            // attach to a runtime of this process running a demo workload
    bool once = false;            // one snapshot, then exit
    std::string format = "text";  // text, json, openmetrics
    unsigned interval_ms = 1000;
    unsigned tasks = 10;  // rows in each task table
};

int run_top(const top_options& o);

}  // namespace blitz::cli
