// SPDX-License-Identifier: MIT
#include "blitz/config.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

#include "blitz/topology.hpp"

namespace blitz {
namespace {

template <class V, class L>
void check(const char* field, V value, L lo, L hi, const char* why = nullptr) {
    if (value >= lo && value <= hi) return;
    std::ostringstream os;
    os << "blitz::config: " << field << " = " << value << " is out of range [" << lo << ", " << hi
       << "]";
    if (why) os << " (" << why << ")";
    throw config_error(os.str());
}

// A signal field: 0 (off), or one in [1, SIGRTMAX] that a handler may take over; `why_bad` says
// what the field is for when it names one that kills, stops or reports a fault.
void check_signal(const char* field, int value, const char* zero, const char* why_bad) {
    if (value == 0) return;
    check(field, value, 1, SIGRTMAX, zero);
    for (int bad : {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
        if (value == bad) {
            throw config_error(std::string("blitz::config: ") + field + " = " +
                               std::to_string(bad) + " (" + strsignal(bad) + ") " + why_bad);
        }
    }
}

}  // namespace

const char* to_string(io_mode_kind m) noexcept {
    return m == io_mode_kind::busy ? "busy" : "shared";
}

const char* to_string(runtime_flavor f) noexcept {
    return f == runtime_flavor::current_thread ? "current_thread" : "multi_thread";
}

runtime_flavor parse_flavor(const std::string& s) {
    for (auto f : {runtime_flavor::multi_thread, runtime_flavor::current_thread}) {
        if (s == to_string(f)) return f;
    }
    throw config_error("unknown flavor '" + s + "' (expected multi_thread or current_thread)");
}

io_mode_kind parse_io_mode(const std::string& s) {
    for (auto m : {io_mode_kind::shared, io_mode_kind::busy}) {
        if (s == to_string(m)) return m;
    }
    throw config_error("unknown io_mode '" + s + "' (expected shared or busy)");
}

void config::validate() const {
    check("workers", workers, 0u, max_workers,
          "the parked-worker bitmap has 64 words of 64 bits; 0 selects the hardware thread "
          "count");
    check("budget_per_tick", budget_per_tick, 1u, 65536u);
    // L3: a cap of the whole budget (or more) is never reached within a tick, so a pair of
    // tasks waking each other through the slot would hold the worker tick after tick.
    check("lifo_polls_per_tick", lifo_polls_per_tick, 0u, budget_per_tick - 1,
          "0 disables the LIFO slot; the cap must stay below budget_per_tick");
    check("max_steal", max_steal, 1u, ring_capacity / 2, "a steal takes at most half the ring");
    check("global_interval_min", global_interval_min, 1u, 255u);
    check("global_interval_max", global_interval_max, global_interval_min, 255u,
          "must be at least global_interval_min");
    if (!(ewma_alpha > 0.0 && ewma_alpha <= 1.0)) check("ewma_alpha", ewma_alpha, 1e-9, 1.0);
    check("global_target_latency (ns)", global_target_latency.count(), std::int64_t{1000},
          std::int64_t{1'000'000'000});
    check("initial_avg_poll (ns)", initial_avg_poll.count(), std::int64_t{1},
          std::int64_t{1'000'000'000});
    check("global_batch_min", global_batch_min, 1u, 256u);
    check("global_batch_max", global_batch_max, global_batch_min, 256u,
          "must be at least global_batch_min");
    check("probe_capacity", probe_capacity, 1024u, 1u << 24);
    check("coop_budget_per_poll", coop_budget_per_poll, 0u, 65536u);
    check("blocking_threads_max", blocking_threads_max, 1u, 65536u);
    if (stall_threshold.count() != 0) {
        check("stall_threshold (ns)", stall_threshold.count(), std::int64_t{1'000'000},
              std::int64_t{3'600'000'000'000}, "0 turns the stall detector off");
    }
    check_signal("stall_signal", stall_signal, "0 takes no stacks",
                 "cannot carry the stall detector's stack request; use 0 (no stacks), SIGURG "
                 "(the default) or a real-time signal");
    check_signal("dump_signal", dump_signal, "0: no dump signal",
                 "cannot ask for a task dump; use SIGUSR1, SIGUSR2 or a real-time signal");
    if (dump_signal != 0) {
        if (dump_signal == stall_signal) {
            throw config_error(
                "blitz::config: dump_signal = stall_signal = " + std::to_string(dump_signal) +
                ": the stall detector's stack request and the dump request need "
                "signals of their own");
        }
    }
    if (inspect_socket.size() > 107) {
        throw config_error("blitz::config: inspect_socket is " +
                           std::to_string(inspect_socket.size()) +
                           " bytes long; a Unix socket path holds at most 107");
    }
    check("blocking_keep_alive (ns)", blocking_keep_alive.count(), std::int64_t{1'000'000},
          std::int64_t{3'600'000'000'000});
    const topology_options& t = topology;
    if (t.policy == placement_policy::list && t.pus.empty()) {
        throw config_error(
            "blitz::config: topology.policy = list needs topology.pus (one PU per worker)");
    }
    if (t.policy != placement_policy::list && !t.pus.empty()) {
        throw config_error("blitz::config: topology.pus is set but topology.policy is not list");
    }
    if (t.policy == placement_policy::list && workers != 0 && t.pus.size() != workers) {
        throw config_error("blitz::config: topology.pus names " + std::to_string(t.pus.size()) +
                           " PUs but workers = " + std::to_string(workers));
    }
    check("topology.pus (count)", t.pus.size(), std::size_t{0}, std::size_t{max_workers});
    if (t.numa_stealing && t.policy == placement_policy::none) {
        throw config_error(
            "blitz::config: topology.numa_stealing needs a placement policy (compact, scatter or "
            "list): with policy none no worker has a node");
    }
    check("park_timeout (ns)", park_timeout.count(), std::int64_t{1000},
          std::int64_t{3'600'000'000'000});
    check("park_spin (ns)", park_spin.count(), std::int64_t{0}, std::int64_t{1'000'000});
    check("io_entries", io_entries, 8u, 32768u, "a power of two");
    if ((io_entries & (io_entries - 1)) != 0) {
        throw config_error("blitz::config: io_entries = " + std::to_string(io_entries) +
                           " is not a power of two");
    }
    if (io_pool_buffers != 0) {
        check("io_pool_buffers", io_pool_buffers, 2u, 32768u, "0 or a power of two");
        if ((io_pool_buffers & (io_pool_buffers - 1)) != 0) {
            throw config_error("blitz::config: io_pool_buffers = " +
                               std::to_string(io_pool_buffers) + " is not a power of two");
        }
    }
    check("io_pool_buffer_size", io_pool_buffer_size, 64u, 1u << 20);
    check("io_pool_queue", io_pool_queue, 1u, 4096u);
    if (flavor == runtime_flavor::current_thread) {
        if (workers > 1) {
            throw config_error("blitz::config: workers = " + std::to_string(workers) +
                               " on a current-thread runtime, whose one worker is the thread "
                               "that calls block_on; use 0 or 1, or flavor multi_thread");
        }
        if (io_mode == io_mode_kind::busy) {
            throw config_error(
                "blitz::config: io_mode = busy on a current-thread runtime: busy workers are "
                "pinned threads of the runtime's own, and a current-thread runtime has none");
        }
        if (t.policy != placement_policy::none) {
            throw config_error(
                "blitz::config: a placement policy on a current-thread runtime, which runs on "
                "the calling thread and starts none to place; pin the calling thread instead");
        }
    }
    if (io_mode == io_mode_kind::busy && t.policy == placement_policy::none) {
        throw config_error(
            "blitz::config: io_mode = busy needs a placement policy (topology.policy compact, "
            "scatter or list): busy workers spin, and unpinned spinning threads the OS stacks on "
            "one CPU stall each other");
    }
    if (busy_poll_spin != busy_poll_forever) {
        check("busy_poll_spin (ns)", busy_poll_spin.count(), std::int64_t{1000},
              std::int64_t{3'600'000'000'000}, "or config::busy_poll_forever");
    }
    check("napi_busy_poll (us)", napi_busy_poll.count(), std::int64_t{0}, std::int64_t{100'000},
          "0 for off");
    check("socket_busy_poll (us)", socket_busy_poll.count(), std::int64_t{0}, std::int64_t{100'000},
          "0 for off");
    if (napi_busy_poll.count() != 0 && io_backend == io_backend_kind::none) {
        throw config_error(
            "blitz::config: napi_busy_poll needs an I/O driver (io_backend is none)");
    }
    if (sqpoll_cpu != -1) {
        check("sqpoll_cpu", sqpoll_cpu, 0, 1 << 20, "an OS CPU index, or -1 for off");
        if (t.policy == placement_policy::none) {
            throw config_error(
                "blitz::config: sqpoll_cpu needs a placement policy: the polling kernel thread "
                "must run on a CPU no worker runs on, and unpinned workers run on every CPU");
        }
        if (io_backend == io_backend_kind::epoll || io_backend == io_backend_kind::none) {
            throw config_error("blitz::config: sqpoll_cpu = " + std::to_string(sqpoll_cpu) +
                               " needs the io_uring backend (io_backend is " +
                               (io_backend == io_backend_kind::epoll ? "epoll" : "none") + ")");
        }
    }
}

unsigned config::resolved_workers() const {
    if (flavor == runtime_flavor::current_thread) return 1;
    if (workers != 0) return workers;
    // The CPUs this process may use: its affinity mask and its cgroup quota (issue 47), not the
    // machine's count (a container limited to 2 CPUs on a 64-core host runs 2 workers).
    return std::clamp(read_cpu_budget().count, 1u, max_workers);
}

}  // namespace blitz
