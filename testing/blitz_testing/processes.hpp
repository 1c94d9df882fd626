// SPDX-License-Identifier: MIT
#pragma once
// For the tests and checkers of child processes (issue 17).

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace blitz::workloads {

// True once no process `pid` exists any more: reaped (a zombie still has /proc/<pid>).
inline bool pid_gone(pid_t pid) {
    struct stat st;
    return ::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0;
}

}  // namespace blitz::workloads
