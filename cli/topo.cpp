// SPDX-License-Identifier: MIT
#include "topo.hpp"

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "blitz/blitz.hpp"
#include "table.hpp"

namespace blitz::cli {
namespace {

// "0-3,8" style list of CPU numbers.
std::string ranges(const std::vector<unsigned>& v) {
    std::ostringstream os;
    for (std::size_t i = 0; i < v.size();) {
        std::size_t j = i;
        while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
        os << (i ? "," : "") << v[i];
        if (j > i) os << "-" << v[j];
        i = j + 1;
    }
    return os.str();
}

std::string text(int v) { return v < 0 ? "-" : std::to_string(v); }

}  // namespace

std::vector<unsigned> parse_pu_list(const std::string& flag, const std::string& v) {
    std::vector<unsigned> out;
    std::istringstream in(v);
    for (std::string item; std::getline(in, item, ',');) {
        try {
            std::size_t used = 0;
            const unsigned long n = std::stoul(item, &used);
            if (used == item.size() && n < (1ul << 20)) {
                out.push_back(static_cast<unsigned>(n));
                continue;
            }
        } catch (const std::exception&) {
        }
        throw std::invalid_argument(flag + " expects PU numbers such as 0,2,4; got '" + v + "'");
    }
    if (out.empty()) throw std::invalid_argument(flag + " expects at least one PU number");
    return out;
}

int run_topo(const topo_options& o) {
    config cfg;
    cfg.topology = o.topology;
    cfg.workers = o.workers;
    cfg.io_mode = o.io_mode;
    cfg.sqpoll_cpu = o.sqpoll_cpu;
    placement_report r = plan_placement(cfg);
    // On the real machine, start the runtime so the table shows what each worker saw from
    // inside its own thread after binding.
    std::unique_ptr<runtime> rt;
    if (!r.synthetic && r.policy != placement_policy::none) {
        rt = std::make_unique<runtime>(cfg);
        r = rt->placement();
    }

    std::cout << "topology: " << r.source
              << (r.synthetic ? " (not this machine: nothing is bound)" : "") << "\n  "
              << r.packages << " package(s), " << r.nodes.size() << " NUMA node(s), " << r.cores
              << " core(s), " << r.pus << " PU(s)\n";
    // What this process may use, which decides the default worker count (issue 47).
    if (!r.synthetic)
        std::cout << "  CPUs for this process: " << read_cpu_budget().to_string() << "\n";
    table nodes({"node", "os index", "package", "PUs (os indexes)"});
    for (const numa_node_info& n : r.nodes) {
        nodes.add({std::to_string(n.index), std::to_string(n.os_index), std::to_string(n.package),
                   ranges(n.pus)});
    }
    nodes.print(std::cout);
    if (!r.distances.empty()) {
        std::cout << "NUMA distances (latency, relative):\n";
        std::vector<std::string> head{"from\\to"};
        for (const auto& n : r.nodes) head.push_back(std::to_string(n.index));
        table d(head);
        for (std::size_t i = 0; i < r.nodes.size(); ++i) {
            std::vector<std::string> row{std::to_string(i)};
            for (std::size_t j = 0; j < r.nodes.size(); ++j) {
                row.push_back(std::to_string(r.distances[i * r.nodes.size() + j]));
            }
            d.add(row);
        }
        d.print(std::cout);
    }
    std::cout << "\nplacement: " << to_string(r.policy)
              << (r.one_pu_per_core ? ", one PU per core" : "") << ", " << r.workers.size()
              << " worker(s)\n";
    if (r.policy == placement_policy::none) {
        std::cout << "  policy none: workers are not placed (the OS schedules them anywhere)\n";
        return 0;
    }
    table t({"worker", "PU", "core", "node", "package", "memory node", "bound",
             "affinity seen inside"});
    for (const worker_placement& w : r.workers) {
        std::string mem = text(w.memory_node);
        if (w.memory_node >= 0) {
            mem += w.memory_bound       ? " (bound)"
                   : r.synthetic        ? " (synthetic)"
                   : r.nodes.size() > 1 ? " (not bound)"
                                        : " (one node)";
        }
        t.add({std::to_string(w.worker), text(w.pu), text(w.core), text(w.node), text(w.package),
               mem,
               r.synthetic ? "no (synthetic)"
               : w.bound   ? "yes"
                           : "NO",
               r.synthetic ? "-" : ranges(w.observed_cpus)});
    }
    t.print(std::cout);
    for (const worker_placement& w : r.workers) {
        if (!w.note.empty()) std::cout << "worker " << w.worker << ": " << w.note << "\n";
    }
    // The I/O side (issue 20): how idle workers wait, and the driver's rings and where they run.
    std::cout << "\nI/O: io_mode " << to_string(o.io_mode);
    if (rt) {
        const runtime_metrics m = rt->metrics();
        std::cout << ", backend " << m.io_backend << "\n  rings: " << m.io_rings << "\n";
    } else {
        std::cout << " (no runtime on a synthetic topology: rings not set up)\n";
    }
    return 0;
}

}  // namespace blitz::cli
