// SPDX-License-Identifier: MIT
#include "topo/machine.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "base/os.hpp"
#include "blitz/topology.hpp"

namespace blitz::detail::topo {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
    const std::size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string read_text_file(const std::string& path, const char* what) {
    std::ifstream f(path);
    if (!f) {
        throw topology_error("cannot read " + std::string(what) + " '" + path +
                             "': " + std::strerror(errno));
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) throw topology_error("cannot read " + std::string(what) + " '" + path + "'");
    return ss.str();
}

std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
}

struct topology_deleter {
    void operator()(hwloc_topology* t) const noexcept { hwloc_topology_destroy(t); }
};
using topology_ptr = std::unique_ptr<hwloc_topology, topology_deleter>;

topology_ptr open_topology(const std::string& source, std::string& label) {
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) throw topology_error("hwloc_topology_init failed");
    topology_ptr t(raw);
    if (source.empty()) {
        label = "this machine";
    } else if (ends_with(source, ".xml")) {
        label = source;
        const std::string xml = read_text_file(source, "topology XML file");
        if (hwloc_topology_set_xmlbuffer(t.get(), xml.data(), static_cast<int>(xml.size()) + 1) !=
            0) {
            throw topology_error("hwloc rejected topology XML file '" + source +
                                 "' (not an hwloc XML export?)");
        }
    } else {
        std::string synthetic = source;
        if (ends_with(source, ".synth")) {
            synthetic = trim(read_text_file(source, "synthetic topology file"));
            label = source + " (" + synthetic + ")";
        } else {
            label = "synthetic \"" + source + "\"";
        }
        if (synthetic.empty() || hwloc_topology_set_synthetic(t.get(), synthetic.c_str()) != 0) {
            throw topology_error("hwloc rejected synthetic topology \"" + synthetic + "\"" +
                                 (synthetic == source ? "" : " from '" + source + "'") +
                                 " (expected levels such as \"pack:2 numa:2 core:8 pu:2\")");
        }
    }
    if (hwloc_topology_load(t.get()) != 0) {
        throw topology_error("hwloc could not load the topology of " + label + ": " +
                             std::strerror(errno));
    }
    return t;
}

}  // namespace

machine load_machine(const std::string& source) {
    machine m;
    topology_ptr t = open_topology(source, m.source);
    hwloc_topology_t topo = t.get();
    m.thissystem = hwloc_topology_is_thissystem(topo) != 0;

    const int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    if (npu <= 0) throw topology_error("the topology of " + m.source + " has no PUs");
    const int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    // On this machine only the CPUs the calling thread may use count (taskset, numactl,
    // a container's cpuset): placing a worker elsewhere would fail or escape the user's limit.
    std::vector<unsigned> allowed;
    if (source.empty()) allowed = os::this_thread_cpus();
    auto usable = [&](unsigned os) {
        return allowed.empty() || std::binary_search(allowed.begin(), allowed.end(), os);
    };

    std::map<unsigned, unsigned> package_of, node_of;  // hwloc logical index -> dense index
    std::map<hwloc_obj_t, unsigned> core_of;
    std::map<unsigned, unsigned> hw_node_dense;  // hwloc node logical -> dense
    for (int i = 0; i < npu; ++i) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
        if (!usable(pu->os_index)) continue;
        pu_info p;
        p.os = pu->os_index;
        if (hwloc_obj_t pack = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu)) {
            p.package = package_of.emplace(pack->logical_index, package_of.size()).first->second;
        }
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
        if (core) {
            const auto [it, fresh] = core_of.emplace(core, m.cores);
            if (fresh) ++m.cores;
            p.core = it->second;
            // Rank among the core's PUs: count the earlier PUs inside the same core.
            for (hwloc_obj_t q = pu->prev_cousin;
                 q && hwloc_bitmap_isset(core->cpuset, static_cast<int>(q->os_index));
                 q = q->prev_cousin) {
                ++p.sibling;
            }
        } else {
            p.core = m.cores++;  // no core level: each PU counts as its own core
        }
        // The first NUMA node whose CPU set holds this PU (memory-only nodes have none).
        unsigned hw_node = 0;
        for (int n = 0; n < nnuma; ++n) {
            hwloc_obj_t node =
                hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
            if (node->cpuset && hwloc_bitmap_isset(node->cpuset, static_cast<int>(pu->os_index))) {
                hw_node = static_cast<unsigned>(n);
                break;
            }
        }
        const auto [nit, fresh_node] = hw_node_dense.emplace(hw_node, hw_node_dense.size());
        if (fresh_node) {
            node_info ni;
            hwloc_obj_t node =
                nnuma > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, hw_node) : nullptr;
            ni.os = node ? node->os_index : 0;
            ni.package = p.package;
            m.nodes.push_back(ni);
        }
        p.node = nit->second;
        m.nodes[p.node].pus.push_back(static_cast<unsigned>(m.pus.size()));
        m.pus.push_back(p);
    }
    if (m.pus.empty()) {
        throw topology_error("none of the PUs of " + m.source + " is in this thread's CPU set");
    }
    m.packages = package_of.empty() ? 1u : static_cast<unsigned>(package_of.size());

    // NUMA latency distances, when the topology has them (real machines with a SLIT, some XML).
    unsigned nr = 1;
    hwloc_distances_s* d = nullptr;
    if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
        nr == 1 && d) {
        const std::size_t k = m.nodes.size();
        std::vector<unsigned long long> mat(k * k, 0);
        bool complete = true;
        std::vector<int> slot(d->nbobjs, -1);  // distance object -> dense node
        for (unsigned i = 0; i < d->nbobjs; ++i) {
            auto it = hw_node_dense.find(d->objs[i]->logical_index);
            if (it != hw_node_dense.end()) slot[i] = static_cast<int>(it->second);
        }
        std::size_t filled = 0;
        for (unsigned i = 0; i < d->nbobjs; ++i) {
            for (unsigned j = 0; j < d->nbobjs; ++j) {
                if (slot[i] < 0 || slot[j] < 0) continue;
                mat[static_cast<std::size_t>(slot[i]) * k + static_cast<std::size_t>(slot[j])] =
                    d->values[i * d->nbobjs + j];
                ++filled;
            }
        }
        complete = filled == k * k;
        hwloc_distances_release(topo, d);
        if (complete) m.distances = std::move(mat);
    }
    return m;
}

machine uniform_machine(unsigned packages, unsigned nodes_per_package, unsigned cores_per_node,
                        unsigned pus_per_core) {
    machine m;
    m.source = "uniform " + std::to_string(packages) + "x" + std::to_string(nodes_per_package) +
               "x" + std::to_string(cores_per_node) + "x" + std::to_string(pus_per_core);
    m.packages = packages;
    for (unsigned p = 0; p < packages; ++p) {
        for (unsigned n = 0; n < nodes_per_package; ++n) {
            node_info ni;
            ni.os = static_cast<unsigned>(m.nodes.size());
            ni.package = p;
            for (unsigned c = 0; c < cores_per_node; ++c, ++m.cores) {
                for (unsigned s = 0; s < pus_per_core; ++s) {
                    ni.pus.push_back(static_cast<unsigned>(m.pus.size()));
                    m.pus.push_back(pu_info{static_cast<unsigned>(m.pus.size()), m.cores,
                                            static_cast<unsigned>(m.nodes.size()), p, s});
                }
            }
            m.nodes.push_back(std::move(ni));
        }
    }
    return m;
}

}  // namespace blitz::detail::topo
