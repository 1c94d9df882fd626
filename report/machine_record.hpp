// SPDX-License-Identifier: MIT
#pragma once
// machine_record: what every published result records about the machine it ran on (the
// conformance tables and the benchmark report), read once and written by one function per
// format.

#include <ostream>
#include <string>

#include "json_writer.hpp"

namespace blitz::report {

struct machine_record {
    std::string id;  // short id, e.g. "epyc-2c": the results/ folder name (not unique)
    // Unique per machine (installation): a hash of /etc/machine-id (or of the hostname and the
    // boot id when there is none), so two machines with the same short id are told apart.
    std::string uid;
    std::string date;     // when the record was read, UTC, ISO 8601
    std::string cpu;      // model name from /proc/cpuinfo
    std::string cpu_mhz;  // "cpu MHz" of the first CPU in /proc/cpuinfo ("unknown" if absent)
    long logical_cpus = 0;
    std::string caches;  // from hwloc, e.g. "L1d 48 KiB x2, L2 1 MiB x2, L3 32 MiB x1"
    std::string memory;  // MemTotal
    // "none" without the cpuinfo hypervisor flag; else the vendor CPUID leaf 0x40000000
    // names (KVM, bhyve, Hyper-V, VMware, Xen, ...).
    std::string hypervisor;
    std::string governor;      // cpufreq scaling governor of CPU 0, or "n/a (no cpufreq)"
    std::string load_average;  // 1, 5 and 15 minute load averages when the record was read
    std::string topology;      // hwloc's one-line summary
    std::string topology_xml;  // hwloc's XML export ("" when hwloc could not load)
    std::string os;            // PRETTY_NAME from /etc/os-release
    std::string kernel;
    std::string compiler;
    std::string build_flags;
    std::string commit;
    bool dirty = false;  // the work tree had uncommitted changes (outside results/)
    // The I/O backend a runtime with io_backend = automatic picks here, and why (O1). The
    // report library does not link the runtime: the caller fills these in.
    std::string io_backend = "unknown";
    std::string io_backend_reason;
    // The io_modes the run used ("shared", or "shared, busy") and the driver's rings as a
    // runtime reports them (runtime_metrics::io_rings), both filled in by the caller.
    std::string io_modes = "shared";
    std::string io_rings;
    // The CPUs the process may use (blitz::cpu_budget::to_string: the count the default worker
    // count takes, the affinity mask, the cgroup quota), filled in by the caller.
    std::string cpu_budget = "unknown";
};

// Reads this machine (hwloc, /proc/cpuinfo, uname, lscpu, git). `build_flags` is the build's
// own description of its flags (the binary knows them; the library does not).
machine_record read_machine_record(const std::string& build_flags);
// The short id alone (cheaper: no hwloc, no git).
std::string machine_id();

// The record as the value of the current key or array slot (an object; the XML is left out:
// it goes to topology.xml beside the report).
void write_json(json_writer& w, const machine_record& m);
// The record as rows of a two-column Markdown table (`| field | value |`), without the header.
void write_markdown_rows(std::ostream& os, const machine_record& m);

}  // namespace blitz::report
