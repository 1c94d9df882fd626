// SPDX-License-Identifier: MIT
#include "machine_record.hpp"

#include <hwloc.h>
#include <sys/utsname.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <utility>

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

// lscpu's "Hypervisor vendor" (empty when it names none): the short id's suffix, kept as it
// was so results/ folder names stay stable.
std::string lscpu_hypervisor() {
    return run_command("lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[[:space:]]*//p'");
}

// The first line of /proc/cpuinfo starting with `key`, after its colon ("" if absent).
std::string cpuinfo_field(const std::string& key) {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind(key, 0) == 0) {
            const auto colon = line.find(':');
            return colon == std::string::npos ? "" : line.substr(colon + 2);
        }
    }
    return "";
}

std::string cpu_model() {
    const std::string m = cpuinfo_field("model name");
    return m.empty() ? "unknown" : m;
}

std::string hypervisor() {
    const std::string flags = " " + cpuinfo_field("flags") + " ";
    if (flags.find(" hypervisor ") == std::string::npos) return "none";
    std::string vendor;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid(0x40000000, a, b, c, d);
    char sig[13] = {};
    std::memcpy(sig, &b, 4);
    std::memcpy(sig + 4, &c, 4);
    std::memcpy(sig + 8, &d, 4);
    static const std::pair<const char*, const char*> known[] = {
        {"KVMKVMKVM", "KVM"},       {"bhyve bhyve", "bhyve"},     {"Microsoft Hv", "Hyper-V"},
        {"VMwareVMware", "VMware"}, {"XenVMMXenVMM", "Xen"},      {"TCGTCGTCGTCG", "QEMU TCG"},
        {"ACRNACRNACRN", "ACRN"},   {" lrpepyh  vr", "Parallels"}};
    for (const auto& [s, name] : known) {
        if (std::strncmp(sig, s, std::strlen(s)) == 0) vendor = name;
    }
    if (vendor.empty() && sig[0] != '\0') vendor = sig;
#endif
    if (vendor.empty()) vendor = lscpu_hypervisor();
    return (vendor.empty() ? "unknown" : vendor) + " (cpuinfo hypervisor flag)";
}

std::string first_line(const char* path) {
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    return line;
}

std::string os_name() {
    std::ifstream f("/etc/os-release");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("PRETTY_NAME=", 0) == 0) {
            std::string v = line.substr(12);
            if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
            return v;
        }
    }
    return "unknown";
}

std::string memory_total() {
    std::ifstream f("/proc/meminfo");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("MemTotal:", 0) == 0) {
            const long kib = std::strtol(line.c_str() + 9, nullptr, 10);
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.1f GiB", double(kib) / (1024.0 * 1024.0));
            return buf;
        }
    }
    return "unknown";
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// FNV-1a, 64 bits, as 12 hex digits: enough to tell machines apart without publishing the id.
std::string short_hash(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : s) {
        h ^= ch;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return std::string(buf, 12);
}

std::string machine_uid() {
    std::string id = first_line("/etc/machine-id");
    if (id.empty()) {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        id = std::string(host) + "/" + first_line("/proc/sys/kernel/random/boot_id");
    }
    return short_hash(id);
}

std::string size_text(unsigned long long bytes) {
    if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes >> 10) + " KiB";
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
        // Caches: each level's size and how many there are (data and unified caches).
        const std::pair<hwloc_obj_type_t, const char*> levels[] = {
            {HWLOC_OBJ_L1CACHE, "L1d"}, {HWLOC_OBJ_L2CACHE, "L2"}, {HWLOC_OBJ_L3CACHE, "L3"}};
        for (const auto& [type, name] : levels) {
            const int n = count(type);
            if (n <= 0) continue;
            const hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, 0);
            if (!o || !o->attr) continue;
            m.caches += (m.caches.empty() ? "" : ", ") + std::string(name) + " " +
                        size_text(o->attr->cache.size) + " x" + std::to_string(n);
        }
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
    std::string hv = lscpu_hypervisor();
    for (auto& ch : hv) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!hv.empty()) id += "-" + hv;
    return id;
}

machine_record read_machine_record(const std::string& build_flags) {
    machine_record m;
    m.date = utc_now();
    m.load_average = first_line("/proc/loadavg");
    if (const auto cut =
            m.load_average.find(' ', m.load_average.find(' ', m.load_average.find(' ') + 1) + 1);
        cut != std::string::npos) {
        m.load_average.resize(cut);  // "1.00 0.50 0.25", without the task counts
    }
    m.id = machine_id();
    m.uid = machine_uid();
    m.cpu = cpu_model();
    m.cpu_mhz = cpuinfo_field("cpu MHz");
    if (m.cpu_mhz.empty()) m.cpu_mhz = "unknown";
    m.logical_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    m.memory = memory_total();
    m.os = os_name();
    m.governor = first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    if (m.governor.empty()) m.governor = "n/a (no cpufreq)";
    read_topology(m);
    if (m.caches.empty()) m.caches = "unknown";
    utsname u{};
    uname(&u);
    m.kernel = std::string(u.sysname) + " " + u.release;
    m.compiler = compiler();
    m.build_flags = build_flags;
    m.commit = run_command("git rev-parse --short HEAD 2>/dev/null");
    if (m.commit.empty()) {
        m.commit = "unknown";
    } else {
        // Changes to results/ do not count: a run that writes several reports would otherwise
        // call every report after the first one dirty.
        m.dirty = !run_command(
                       "git status --porcelain --untracked-files=no -- . ':(exclude)results' "
                       "2>/dev/null")
                       .empty();
    }
    m.hypervisor = hypervisor();
    return m;
}

void write_json(json_writer& w, const machine_record& m) {
    w.begin_object()
        .field("id", m.id)
        .field("uid", m.uid)
        .field("date", m.date)
        .field("cpu", m.cpu)
        .field("cpu_mhz", m.cpu_mhz)
        .field("logical_cpus", m.logical_cpus)
        .field("caches", m.caches)
        .field("memory", m.memory)
        .field("hypervisor", m.hypervisor)
        .field("governor", m.governor)
        .field("load_average", m.load_average)
        .field("topology", m.topology)
        .field("os", m.os)
        .field("kernel", m.kernel)
        .field("compiler", m.compiler)
        .field("build_flags", m.build_flags)
        .field("commit", m.commit)
        .field("dirty", m.dirty)
        .field("cpu_budget", m.cpu_budget)
        .field("io_backend", m.io_backend)
        .field("io_backend_reason", m.io_backend_reason)
        .field("io_modes", m.io_modes)
        .field("io_rings", m.io_rings)
        .end_object();
}

void write_markdown_rows(std::ostream& os, const machine_record& m) {
    os << "| machine | " << m.id << " (uid " << m.uid << ") |\n"
       << "| date | " << m.date << " |\n"
       << "| CPU | " << m.cpu << ", " << m.cpu_mhz << " MHz |\n"
       << "| logical CPUs | " << m.logical_cpus << " |\n"
       << "| caches | " << m.caches << " |\n"
       << "| memory | " << m.memory << " |\n"
       << "| hypervisor | " << m.hypervisor << " |\n"
       << "| governor | " << m.governor << " |\n"
       << "| load average at start | " << m.load_average << " |\n"
       << "| topology (hwloc) | " << m.topology
       << (m.topology_xml.empty() ? "" : "; XML export in topology.xml") << " |\n"
       << "| OS | " << m.os << " |\n"
       << "| kernel | " << m.kernel << " |\n"
       << "| compiler | " << m.compiler << " |\n"
       << "| build flags | " << m.build_flags << " |\n"
       << "| commit | " << m.commit << (m.dirty ? " (dirty: uncommitted changes)" : "") << " |\n"
       << "| CPUs for this process | " << m.cpu_budget << " |\n"
       << "| I/O backend (automatic) | " << m.io_backend
       << (m.io_backend_reason.empty() ? "" : " (" + m.io_backend_reason + ")") << " |\n"
       << "| I/O modes | " << m.io_modes << (m.io_rings.empty() ? "" : "; rings: " + m.io_rings)
       << " |\n";
}

}  // namespace blitz::report
