// SPDX-License-Identifier: MIT
#pragma once
// Command-line options of the form `--name N` for the bench tools.

#include <cstdlib>
#include <cstring>

namespace bench_tools {

// The number after `name` on the command line, or `fallback` when it is not there.
inline long arg_or(int argc, char** argv, const char* name, long fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], name) == 0) return std::strtol(argv[i + 1], nullptr, 10);
    }
    return fallback;
}

}  // namespace bench_tools
