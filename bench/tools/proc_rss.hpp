// SPDX-License-Identifier: MIT
#pragma once
// The resident set of this process in bytes (/proc/self/statm), for the memory tools.

#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace bench_tools {

inline std::uint64_t rss_bytes() {
    std::ifstream f("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace bench_tools
