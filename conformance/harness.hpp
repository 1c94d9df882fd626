// SPDX-License-Identifier: MIT
#pragma once
// Runs the checkers over configs, runs each negative control, prints and writes the table.

#include <cstdint>
#include <string>
#include <vector>

#include "blitz/config.hpp"

namespace blitz::conformance {

struct harness_options {
    bool quick = true;
    std::uint64_t seed = 1;
    std::vector<std::string> filter;        // checker ids; empty: all
    std::vector<unsigned> workers{1, 2, 4}; // configs
    // Placement passes for the checkers other than N: each runs every worker count that fits
    // (pinned passes skip counts above this machine's PUs).
    std::vector<placement_policy> policies{placement_policy::none};
    std::string out_dir;                    // where conformance.md/.json go; empty: don't write
    std::string command;                    // the command line, printed to reproduce the run
    // Topologies the N checkers run on besides this machine (--topology); empty: the shipped
    // shapes in conformance/topologies/.
    std::vector<std::string> topologies;
};

// Returns the process exit status: 0 only if every checker passed and every control was caught.
int run_harness(const harness_options& o);

// A short id for this machine, e.g. "xeon-2c-kvm", used as the results/ folder name.
std::string machine_id();

// What a published result records about the machine it ran on (conformance and bench reports).
struct machine_record {
    std::string id, cpu, topology, kernel, compiler, build_flags, commit, hypervisor;
    long logical_cpus = 0;
    std::string topology_xml;  // hwloc's XML export ("" when hwloc could not load)
};
machine_record read_machine_record();
// `s` as the inside of a JSON string (quotes, backslashes and newlines escaped).
inline std::string json_escape(const std::string& s) {
    std::string r;
    for (char c : s) {
        if (c == '"' || c == '\\') r += '\\';
        if (c == '\n') {
            r += "\\n";
            continue;
        }
        r += c;
    }
    return r;
}

}  // namespace blitz::conformance
