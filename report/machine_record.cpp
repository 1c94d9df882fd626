// SPDX-License-Identifier: MIT
#include "machine_record.hpp"

#include <hwloc.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace blitz::report {
namespace {

std::string run_command(const char* cmd) {
    std::string out;
    if (FILE* f = popen(cmd, "r")) {
        char buf[256];
        while (fgets(buf, sizeof buf, f)) out += buf;
        pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    }
    return "unknown";
}

std::string hypervisor() {
    return run_command("lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[[:space:]]*//p'");
}

std::string compiler() {
#if defined(__clang__)
    return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("g++ ") + __VERSION__;
#else
    return "unknown";
#endif
}

void read_topology(machine_record& m) {
    m.topology = "unknown";
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return;
    if (hwloc_topology_load(topo) == 0) {
        auto count = [&](hwloc_obj_type_t t) { return hwloc_get_nbobjs_by_type(topo, t); };
        m.topology = std::to_string(count(HWLOC_OBJ_PACKAGE)) + " package(s), " +
                     std::to_string(count(HWLOC_OBJ_NUMANODE)) + " NUMA node(s), " +
                     std::to_string(count(HWLOC_OBJ_CORE)) + " core(s), " +
                     std::to_string(count(HWLOC_OBJ_PU)) + " PU(s)";
        char* buf = nullptr;
        int len = 0;
        if (hwloc_topology_export_xmlbuffer(topo, &buf, &len, 0) == 0 && buf) {
            m.topology_xml.assign(buf, len > 0 ? static_cast<std::size_t>(len - 1) : 0);
            hwloc_free_xmlbuffer(topo, buf);
        }
    }
    hwloc_topology_destroy(topo);
}

}  // namespace

std::string machine_id() {
    std::string model = cpu_model();
    for (const char* mark : {"(R)", "(r)", "(TM)", "(tm)"}) {
        for (auto pos = model.find(mark); pos != std::string::npos; pos = model.find(mark)) {
            model.erase(pos, std::strlen(mark));
        }
    }
    // The first distinctive word of the model name (not the vendor, "processor" or "core").
    std::string word;
    std::istringstream in(model);
    for (std::string t; in >> t;) {
        std::string w;
        for (char ch : t) {
            if (std::isalnum(static_cast<unsigned char>(ch)))
                w += static_cast<char>(std::tolower(ch));
        }
        if (w.size() >= 3 && w != "intel" && w != "amd" && w != "processor" && w != "cpu" &&
            w.find("core") != 0) {
            word = w;
            break;
        }
    }
    if (word.empty()) word = "cpu";
    std::string id = word + "-" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + "c";
    std::string hv = hypervisor();
    for (auto& ch : hv) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!hv.empty()) id += "-" + hv;
    return id;
}

machine_record read_machine_record(const std::string& build_flags) {
    machine_record m;
    m.id = machine_id();
    m.cpu = cpu_model();
    m.logical_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    read_topology(m);
    utsname u{};
    uname(&u);
    m.kernel = std::string(u.sysname) + " " + u.release;
    m.compiler = compiler();
    m.build_flags = build_flags;
    m.commit = run_command("git rev-parse --short HEAD 2>/dev/null");
    if (m.commit.empty()) m.commit = "unknown";
    m.hypervisor = hypervisor();
    if (m.hypervisor.empty()) m.hypervisor = "none";
    return m;
}

void write_json(json_writer& w, const machine_record& m) {
    w.begin_object()
        .field("id", m.id)
        .field("cpu", m.cpu)
        .field("logical_cpus", m.logical_cpus)
        .field("hypervisor", m.hypervisor)
        .field("topology", m.topology)
        .field("kernel", m.kernel)
        .field("compiler", m.compiler)
        .field("build_flags", m.build_flags)
        .field("commit", m.commit)
        .field("io_backend", m.io_backend)
        .field("io_backend_reason", m.io_backend_reason)
        .end_object();
}

void write_markdown_rows(std::ostream& os, const machine_record& m) {
    os << "| machine | " << m.id << " |\n"
       << "| CPU | " << m.cpu << " |\n"
       << "| logical CPUs | " << m.logical_cpus << " |\n"
       << "| hypervisor | " << m.hypervisor << " |\n"
       << "| topology (hwloc) | " << m.topology
       << (m.topology_xml.empty() ? "" : "; XML export in topology.xml") << " |\n"
       << "| kernel | " << m.kernel << " |\n"
       << "| compiler | " << m.compiler << " |\n"
       << "| build flags | " << m.build_flags << " |\n"
       << "| commit | " << m.commit << " |\n"
       << "| I/O backend (automatic) | " << m.io_backend
       << (m.io_backend_reason.empty() ? "" : " (" + m.io_backend_reason + ")") << " |\n";
}

}  // namespace blitz::report
