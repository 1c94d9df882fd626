// SPDX-License-Identifier: MIT
// How many CPUs this process may use (blitz::cpu_budget, issue 47): the affinity mask and the
// cgroup CPU quota, read from /proc and the cgroup file systems.

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "blitz/topology.hpp"

namespace blitz {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep)) out.push_back(cur);
    return out;
}

bool read_first_line(const std::string& path, std::string& line) {
    std::ifstream f(path);
    return static_cast<bool>(std::getline(f, line));
}

// The calling thread's affinity mask: its CPU count and its list ("0-3,8").
void read_affinity(cpu_budget& b) {
    for (int n = 1024; n <= (1 << 20); n *= 2) {
        cpu_set_t* set = CPU_ALLOC(n);
        if (!set) return;
        const std::size_t size = CPU_ALLOC_SIZE(n);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            b.affinity = static_cast<unsigned>(CPU_COUNT_S(size, set));
            std::string list;
            for (int cpu = 0; cpu < n; ++cpu) {
                if (!CPU_ISSET_S(cpu, size, set)) continue;
                int last = cpu;
                while (last + 1 < n && CPU_ISSET_S(last + 1, size, set)) ++last;
                if (!list.empty()) list += ",";
                list += std::to_string(cpu);
                if (last > cpu) list += "-" + std::to_string(last);
                cpu = last;
            }
            b.affinity_list = list;
            CPU_FREE(set);
            return;
        }
        CPU_FREE(set);
        if (errno != EINVAL) return;  // EINVAL: the kernel's mask is larger; try a larger set
    }
}

// One mounted cgroup hierarchy: where it is mounted and which of its paths is the mount's root.
struct cgroup_mount {
    std::string point, root;
};

// The mount of cgroup v2 (`v2`) or of the v1 hierarchy that has the cpu controller, from
// mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER".
bool find_mount(const std::string& mountinfo, bool v2, cgroup_mount& out) {
    std::ifstream f(mountinfo);
    for (std::string line; std::getline(f, line);) {
        std::istringstream in(line);
        std::vector<std::string> w;
        for (std::string x; in >> x;) w.push_back(x);
        const auto dash = std::find(w.begin(), w.end(), "-");
        if (w.size() < 5 || dash == w.end() || w.end() - dash < 4) continue;
        const std::string& fstype = *(dash + 1);
        if (v2 ? fstype != "cgroup2" : fstype != "cgroup") continue;
        if (!v2) {
            const auto opts = split(*(dash + 3), ',');
            if (std::find(opts.begin(), opts.end(), "cpu") == opts.end()) continue;
        }
        out.root = w[3];
        out.point = w[4];
        return true;
    }
    return false;
}

// The process's cgroup path in the v2 hierarchy (`v2`) or in the v1 hierarchy with the cpu
// controller, from /proc/self/cgroup: "ID:CONTROLLERS:PATH".
bool find_path(const std::string& proc_cgroup, bool v2, std::string& out) {
    std::ifstream f(proc_cgroup);
    for (std::string line; std::getline(f, line);) {
        const auto a = line.find(':');
        const auto b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1);
        if (v2 ? (line.compare(0, a, "0") != 0 || !controllers.empty()) : controllers.empty())
            continue;
        if (!v2) {
            const auto c = split(controllers, ',');
            if (std::find(c.begin(), c.end(), "cpu") == c.end()) continue;
        }
        out = line.substr(b + 1);
        return true;
    }
    return false;
}

// The directory of the process's cgroup under the mount: the path below the mount's root (a
// container's namespace shows the root itself), else the mount point.
std::string cgroup_dir(const cgroup_mount& m, const std::string& path) {
    if (m.root == "/") return m.point + (path == "/" ? "" : path);
    if (path.compare(0, m.root.size(), m.root) == 0) return m.point + path.substr(m.root.size());
    return m.point;
}

// The smallest quota on the way from `dir` up to the mount point, in CPUs (0: none). `read`
// gives one directory's quota (0: none there).
template <class Read>
double smallest_quota(std::string dir, const std::string& point, std::string& source, Read read) {
    double best = 0;
    for (;;) {
        std::string file;
        const double q = read(dir, file);
        if (q > 0 && (best == 0 || q < best)) {
            best = q;
            source = file;
        }
        if (dir.size() <= point.size()) break;
        const auto slash = dir.find_last_of('/');
        if (slash == std::string::npos || slash < point.size()) break;
        dir.resize(slash);
    }
    return best;
}

// cgroup v2: "max 100000" (none) or "QUOTA PERIOD" in cpu.max.
double v2_quota(const std::string& dir, std::string& file) {
    file = dir + "/cpu.max";
    std::string line;
    if (!read_first_line(file, line)) return 0;
    std::istringstream in(line);
    std::string quota;
    double period = 0;
    if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
    try {
        return std::stod(quota) / period;
    } catch (const std::exception&) {
        return 0;
    }
}

// cgroup v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us.
double v1_quota(const std::string& dir, std::string& file) {
    file = dir + "/cpu.cfs_quota_us";
    std::string q, p;
    if (!read_first_line(file, q) || !read_first_line(dir + "/cpu.cfs_period_us", p)) return 0;
    try {
        const double quota = std::stod(q), period = std::stod(p);
        return quota > 0 && period > 0 ? quota / period : 0;
    } catch (const std::exception&) {
        return 0;
    }
}

}  // namespace

cpu_budget read_cpu_budget(const std::string& proc_cgroup, const std::string& mountinfo) {
    cpu_budget b;
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    b.online = online > 0 ? static_cast<unsigned>(online) : 1;
    read_affinity(b);
    b.quota_source = "no cgroup CPU quota";
    for (const bool v2 : {true, false}) {
        cgroup_mount m;
        std::string path;
        if (!find_mount(mountinfo, v2, m) || !find_path(proc_cgroup, v2, path)) continue;
        std::string source;
        const double q =
            smallest_quota(cgroup_dir(m, path), m.point, source, v2 ? &v2_quota : &v1_quota);
        if (q > 0 && (b.quota == 0 || q < b.quota)) {
            b.quota = q;
            b.quota_source = source;
        }
    }
    unsigned n = b.affinity != 0 ? b.affinity : b.online;
    if (b.quota > 0) {
        // Rounded up: 1.5 CPUs of quota keep 2 workers busy part of the time, not 1 all of it.
        const double up = std::ceil(b.quota - 1e-9);
        n = std::min<unsigned>(n, static_cast<unsigned>(std::max(1.0, up)));
    }
    b.count = std::max(1u, n);
    return b;
}

cpu_budget read_cpu_budget() {
    return read_cpu_budget("/proc/self/cgroup", "/proc/self/mountinfo");
}

std::string cpu_budget::to_string() const {
    std::ostringstream o;
    o << count << " (affinity ";
    if (affinity != 0) {
        o << affinity_list << ": " << affinity << (affinity == 1 ? " CPU" : " CPUs");
    } else {
        o << "unknown";
    }
    o << "; ";
    if (quota > 0) {
        char q[32];
        std::snprintf(q, sizeof q, "%.2f", quota);
        o << "quota " << q << " CPUs from " << quota_source;
    } else {
        o << quota_source;
    }
    o << "; " << online << " online)";
    return o.str();
}

}  // namespace blitz
