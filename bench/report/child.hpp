// SPDX-License-Identifier: MIT
#pragma once
// Runs one benchmark child process (a peer or blitz's runner) with its output captured.

#include <chrono>
#include <string>
#include <vector>

namespace blitz::bench {

struct child_result {
    std::string out, err;
    int status = -1;
    bool timed_out = false;
};

// Runs argv with stdout and stderr captured; kills it after `timeout`.
child_result run_child(const std::vector<std::string>& argv, std::chrono::seconds timeout);

}  // namespace blitz::bench
