// SPDX-License-Identifier: MIT
#include "registry.hpp"

#include <algorithm>
#include <set>
#include <string>

namespace blitz::conformance {

const std::vector<checker>& all_checkers() {
    static const std::vector<checker> all = [] {
        std::vector<checker> v;
        for (auto* group : {queue_checkers, sched_checkers, task_checkers, timer_checkers,
                            io_checkers, process_checkers, sync_checkers, chan_checkers,
                            join_checkers, pinned_checkers, topo_checkers, debug_checkers}) {
            for (auto& c : group()) v.push_back(std::move(c));
        }
        // Issue 47: the checkers that also run, with their controls, on a current-thread
        // runtime. Each holds for one worker and drives its runtime only through block_on and
        // join (the others wait on a plain thread for workers of the runtime's own, need
        // several workers, or place them).
        static const std::set<std::string> on_current_thread = {
            "Q4",  "Q6",  "L1",  "L2",  "L3", "G1", "G3", "G4", "G5", "G7", "G8", "B1",
            "B2",  "I5",  "K1",  "K5",  "T5", "T6", "T8", "O1", "O3", "O5", "O6", "O7",
            "O10", "O11", "O12", "O14", "X1", "X2", "X3", "X4", "X5", "X6", "X7", "X8"};
        for (auto& c : v) c.current_thread = on_current_thread.count(c.id) != 0;
        // INVARIANTS.md order: groups Q, L, G, B, I, K, P, T, O, X, N, D, then the number.
        const std::string order = "QLGBIKPTOXND";
        std::sort(v.begin(), v.end(), [&](const checker& a, const checker& b) {
            const auto ga = order.find(a.id[0]), gb = order.find(b.id[0]);
            if (ga != gb) return ga < gb;
            return std::stoi(a.id.substr(1)) < std::stoi(b.id.substr(1));
        });
        return v;
    }();
    return all;
}

}  // namespace blitz::conformance
