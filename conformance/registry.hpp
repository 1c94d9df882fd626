// SPDX-License-Identifier: MIT
#pragma once
// Each checker file contributes its group; all_checkers() orders them as INVARIANTS.md does.

#include <vector>

#include "checker.hpp"

namespace blitz::conformance {

std::vector<checker> queue_checkers();    // checkers_queue.cpp (Q)
std::vector<checker> sched_checkers();    // checkers_sched.cpp (L, G, B1, I)
std::vector<checker> task_checkers();     // checkers_task.cpp (K)
std::vector<checker> timer_checkers();    // checkers_timer.cpp (T)
std::vector<checker> io_checkers();       // checkers_io.cpp (O)
std::vector<checker> process_checkers();  // checkers_process.cpp (O13)
std::vector<checker> sync_checkers();     // checkers_sync.cpp (B2, X1-X4)
std::vector<checker> chan_checkers();     // checkers_chan.cpp (X5-X7)
std::vector<checker> join_checkers();     // checkers_join.cpp (X8)
std::vector<checker> pinned_checkers();   // checkers_pinned.cpp (P1)
std::vector<checker> topo_checkers();     // checkers_topo.cpp (N)

}  // namespace blitz::conformance
