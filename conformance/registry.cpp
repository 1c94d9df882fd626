// SPDX-License-Identifier: MIT
#include "registry.hpp"

#include <algorithm>
#include <string>

namespace blitz::conformance {

const std::vector<checker>& all_checkers() {
    static const std::vector<checker> all = [] {
        std::vector<checker> v;
        for (auto* group :
             {queue_checkers, sched_checkers, task_checkers, timer_checkers, io_checkers,
              process_checkers, sync_checkers, chan_checkers, topo_checkers, debug_checkers}) {
            for (auto& c : group()) v.push_back(std::move(c));
        }
        // INVARIANTS.md order: groups Q, L, G, B, I, K, T, O, X, N, D, then the number.
        const std::string order = "QLGBIKTOXND";
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
