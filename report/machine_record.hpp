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
    std::string id;   // short id, e.g. "epyc-2c": the results/ folder name
    std::string cpu;  // model name from /proc/cpuinfo
    long logical_cpus = 0;
    std::string hypervisor;    // "none" on bare metal
    std::string topology;      // hwloc's one-line summary
    std::string topology_xml;  // hwloc's XML export ("" when hwloc could not load)
    std::string kernel;
    std::string compiler;
    std::string build_flags;
    std::string commit;
    // The I/O backend a runtime with io_backend = automatic picks here, and why (O1). The
    // report library does not link the runtime: the caller fills these in.
    std::string io_backend = "unknown";
    std::string io_backend_reason;
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
