// SPDX-License-Identifier: MIT
#include "base/os.hpp"

#include <numa.h>
#include <numaif.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace blitz::detail::os {
namespace {

// CPU sets sized for any machine the kernel supports, not just the 1024 CPUs of cpu_set_t.
constexpr int max_cpus = 8192;

struct cpu_set_deleter {
    void operator()(cpu_set_t* s) const noexcept { CPU_FREE(s); }
};
using cpu_set_ptr = std::unique_ptr<cpu_set_t, cpu_set_deleter>;

cpu_set_ptr make_set() {
    cpu_set_ptr s(CPU_ALLOC(max_cpus));
    if (s) CPU_ZERO_S(CPU_ALLOC_SIZE(max_cpus), s.get());
    return s;
}

}  // namespace

std::string bind_this_thread(unsigned cpu) { return set_this_thread_cpus({cpu}); }

std::string set_this_thread_cpus(const std::vector<unsigned>& cpus) {
    cpu_set_ptr s = make_set();
    if (!s) return "out of memory";
    for (unsigned c : cpus) {
        if (c >= static_cast<unsigned>(max_cpus)) return "CPU index out of range";
        CPU_SET_S(c, CPU_ALLOC_SIZE(max_cpus), s.get());
    }
    if (sched_setaffinity(0, CPU_ALLOC_SIZE(max_cpus), s.get()) != 0) return std::strerror(errno);
    return {};
}

std::vector<unsigned> this_thread_cpus() {
    std::vector<unsigned> r;
    cpu_set_ptr s = make_set();
    if (!s || sched_getaffinity(0, CPU_ALLOC_SIZE(max_cpus), s.get()) != 0) return r;
    for (int c = 0; c < max_cpus; ++c) {
        if (CPU_ISSET_S(c, CPU_ALLOC_SIZE(max_cpus), s.get()))
            r.push_back(static_cast<unsigned>(c));
    }
    return r;
}

int current_cpu() noexcept { return sched_getcpu(); }

int kernel_numa_nodes() noexcept {
    if (numa_available() < 0) return 1;
    const int n = numa_num_configured_nodes();
    return n > 0 ? n : 1;
}

void* alloc_on_node(std::size_t bytes, int node) noexcept {
    if (numa_available() < 0 || node < 0 || node > numa_max_node()) return nullptr;
    void* p = numa_alloc_onnode(bytes, node);
    if (p) std::memset(p, 0, bytes);  // fault the pages in under the node policy
    return p;
}

void free_on_node(void* p, std::size_t bytes) noexcept {
    if (p) numa_free(p, bytes);
}

int node_of(const void* p) noexcept {
    // move_pages with no target nodes only reports where each page is.
    void* page = const_cast<void*>(p);
    int status = -1;
    if (move_pages(0, 1, &page, nullptr, &status, 0) != 0) return -1;
    return status >= 0 ? status : -1;
}

}  // namespace blitz::detail::os
