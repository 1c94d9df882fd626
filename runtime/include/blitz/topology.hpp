// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// Topology and placement (issue 5): where each worker runs and where its memory lives.

#include <stdexcept>
#include <string>
#include <vector>

#include "blitz/config.hpp"

namespace blitz {

// Raised when the topology cannot be loaded (a synthetic string hwloc rejects, an unreadable or
// invalid XML file), when a placement cannot be made (more pinned workers than PUs, an explicit
// PU that does not exist) and, unless topology_options::best_effort, when a worker cannot bind
// to its PU. The message names the input: the string, the file, the worker and the PU.
class topology_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One NUMA node of the machine (only nodes with PUs are listed).
struct numa_node_info {
    unsigned index = 0;     // dense logical index used in worker_placement::node
    unsigned os_index = 0;  // the kernel's node number
    unsigned package = 0;
    std::vector<unsigned> pus;  // OS indexes of its PUs
};

// Where one worker was placed, and what it saw when it got there.
struct worker_placement {
    unsigned worker = 0;
    // The PU (OS index) and its core, NUMA node and package (logical indexes); -1 with policy
    // none.
    int pu = -1, core = -1, node = -1, package = -1;
    // True when the worker thread bound itself to `pu` (real machine, placement policy set).
    bool bound = false;
    // The thread's CPU set as sched_getaffinity reported it from inside the worker right after
    // binding (or at start when nothing was bound). Empty with policy none.
    std::vector<unsigned> observed_cpus;
    // The NUMA node (dense index) the worker's state was requested on; -1 when no node was
    // chosen. memory_bound: the request was made to the kernel (a real machine with more than
    // one node). memory_node_observed: the node the kernel reports for the state's first page
    // (move_pages), -1 when unknown (synthetic topology, no NUMA support).
    int memory_node = -1;
    bool memory_bound = false;
    int memory_node_observed = -1;
    std::string note;  // why binding failed under best_effort, if it did
};

struct placement_report {
    std::string source;      // "this machine", the synthetic string or the XML file
    bool synthetic = false;  // not this machine (hwloc_topology_is_thissystem() == 0)
    unsigned packages = 0, cores = 0, pus = 0;
    std::vector<numa_node_info> nodes;
    // NUMA latency matrix from the topology (row-major, nodes.size()^2), empty when unknown.
    std::vector<unsigned long long> distances;
    placement_policy policy = placement_policy::none;
    bool one_pu_per_core = false;
    bool numa_stealing = false;
    std::vector<worker_placement> workers;

    // One line for result files, e.g. "compact on this machine (1 package, 1 node, 2 cores,
    // 2 PUs): w0->PU0 w1->PU1, bound".
    std::string summary() const;
};

// Computes the placement `cfg` asks for without starting a runtime (binding and memory fields
// stay empty). `workers` overrides cfg.workers when non-zero. Throws config_error for an invalid
// config and topology_error for bad topology input or an impossible placement. On this machine
// only the PUs in the calling thread's CPU set are used (as the runtime does).
placement_report plan_placement(const config& cfg, unsigned workers = 0);

// How many CPUs this process may use (issue 47): the CPUs online, its affinity mask, and the CPU
// quota of its cgroup (v2's cpu.max, or v1's cpu.cfs_quota_us over cpu.cfs_period_us; the
// smallest along the path from its cgroup to the root). A container limited to 2 CPUs on a
// 64-core host gets 2, as Go's runtime and Rust's available_parallelism decide.
struct cpu_budget {
    unsigned online = 0;        // CPUs online
    unsigned affinity = 0;      // CPUs in the calling thread's affinity mask (0: unknown)
    std::string affinity_list;  // the mask as a list, e.g. "0-3,8"
    double quota = 0;           // the cgroup quota in CPUs (e.g. 1.5); 0: none
    std::string quota_source;   // the file the quota came from, or why there is none
    // What blitz uses: min(affinity, quota rounded up), at least 1 (online when the mask is
    // unknown).
    unsigned count = 1;
    // One line: "2 (affinity 0-3: 4 CPUs; quota 1.5 CPUs from /sys/fs/cgroup/a/cpu.max; 8
    // online)".
    std::string to_string() const;
};
// Reads the calling thread's budget from /proc and /sys.
cpu_budget read_cpu_budget();
// The same from other files (tests): `proc_cgroup` in /proc/self/cgroup's format and
// `mountinfo` in /proc/self/mountinfo's (where the cgroup hierarchies are mounted). The
// affinity and online counts are the calling thread's.
cpu_budget read_cpu_budget(const std::string& proc_cgroup, const std::string& mountinfo);

const char* to_string(placement_policy p) noexcept;
// "none", "compact", "scatter" or "list"; throws config_error naming the bad value.
placement_policy parse_placement_policy(const std::string& s);

}  // namespace blitz
