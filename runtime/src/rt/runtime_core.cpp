// SPDX-License-Identifier: MIT
#include "rt/runtime_core.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "base/os.hpp"
#include "blitz/detail/faults.hpp"
#include "topo/placement.hpp"

namespace blitz::detail {

// ---- runtime_core ----

namespace {

blocking_pool::options blocking_options(const config& cfg, const topo::plan& plan) {
    blocking_pool::options o;
    o.max_threads = cfg.blocking_threads_max;
    o.keep_alive = cfg.blocking_keep_alive;
    o.fault_ignore_cap = BLITZ_FAULT(cfg.debug.blocking_ignores_cap);
    o.fault_one_idle_for_all = BLITZ_FAULT(cfg.debug.blocking_one_idle_for_all);
#if BLITZ_FAULTS
    o.test_wake_delay = cfg.debug.blocking_wake_delay;
#endif
    if (plan.placed && !plan.report.synthetic) {
        if (cfg.topology.pin_blocking_pool) {
            for (int cpu : plan.bind_cpu) {
                if (cpu >= 0) o.cpus.push_back(static_cast<unsigned>(cpu));
            }
            std::sort(o.cpus.begin(), o.cpus.end());
            o.cpus.erase(std::unique(o.cpus.begin(), o.cpus.end()), o.cpus.end());
        } else {
            o.cpus = os::this_thread_cpus();  // the constructing thread's set: the process's
        }
    }
    return o;
}

// The I/O driver, after the checks that need the placement: an SQPOLL thread must not share
// a worker's CPU (IO.md 4.4: it stalls the worker it shares with).
std::shared_ptr<io_driver> make_io(const config& cfg, const topo::plan& plan, std::string& reason) {
    if (cfg.sqpoll_cpu >= 0) {
        for (std::size_t i = 0; i < plan.bind_cpu.size(); ++i) {
            if (plan.bind_cpu[i] == cfg.sqpoll_cpu) {
                throw config_error("blitz::config: sqpoll_cpu = " + std::to_string(cfg.sqpoll_cpu) +
                                   " is worker " + std::to_string(i) +
                                   "'s CPU; the polling kernel thread needs a CPU no worker "
                                   "runs on");
            }
        }
    }
    std::shared_ptr<io_driver> d = io_driver::create(cfg, reason);
    // A current-thread runtime's worker runs on whichever thread drives it, and a worker's ring
    // has one issuer for life: its I/O stays on the shared ring.
    if (d && cfg.io_worker_rings && cfg.flavor == runtime_flavor::multi_thread) {
        d->create_worker_rings(static_cast<unsigned>(plan.report.workers.size()), cfg.io_entries);
    }
    return d;
}

driver_stack::faults driver_faults([[maybe_unused]] const config& cfg) {
    driver_stack::faults f;
#if BLITZ_FAULTS
    f.no_timer_wake = cfg.debug.timer_arm_skips_wake;
    f.no_driver_wake = cfg.debug.io_skip_driver_wake;
    f.no_handoff = cfg.debug.io_no_handoff;
#endif
    return f;
}

timer_driver::early_fault timer_fault([[maybe_unused]] const config& cfg) {
#if BLITZ_FAULTS
    if (cfg.debug.timers_fire_half_early) return timer_driver::early_fault::half_wait;
    if (cfg.debug.timers_fire_early) return timer_driver::early_fault::one_tick;
#endif
    return timer_driver::early_fault::none;
}

}  // namespace

runtime_core::runtime_core(const config& cfg)
    : cfg_(cfg),
      plan_(topo::make_plan(cfg_)),
      timers_(cfg_.start_paused, timer_fault(cfg_),
              static_cast<unsigned>(plan_.report.workers.size())),
      blocking_(blocking_options(cfg_, plan_)),
      io_(make_io(cfg_, plan_, io_reason_)),
      drivers_(timers_, io_.get(), static_cast<unsigned>(plan_.report.workers.size()),
               driver_faults(cfg_)),
      ctx_{nullptr, &timers_, io_.get(), &blocking_, &cfg_},
      start_latch_(plan_.placed ? std::make_unique<std::latch>(plan_.report.workers.size())
                                : nullptr),
      sched_(cfg_, make_setup()) {
    // Before any task exists: spawns reach the scheduler through the context from here on.
    ctx_.sched = &sched_;
    drivers_.attach(&sched_);
    if (start_latch_) await_binding();
    if (!cfg_.inspect_socket.empty() || cfg_.dump_signal != 0) {
        inspect_ = std::make_unique<inspect_server>(
            cfg_.inspect_socket, cfg_.dump_signal,
            [this](const std::string& request) { return answer_inspect(request); },
            [this] { return sched_.dump(std::chrono::seconds(1)).to_string(); });
    }
}

lost_report runtime_core::find_lost(std::chrono::nanoseconds wait) {
    const runtime_dump first = sched_.dump(wait);
    const runtime_dump second = sched_.dump(wait);
    return blitz::find_lost(first, second);
}

std::string runtime_core::answer_inspect(const std::string& request) {
    if (request == "metrics") return metrics().to_json() + "\n";
    if (request == "openmetrics") return metrics().to_openmetrics();
    if (request == "dump") return sched_.dump(std::chrono::seconds(1)).to_json() + "\n";
    if (request == "dump text") return sched_.dump(std::chrono::seconds(1)).to_string();
    if (request == "lost") return find_lost(std::chrono::seconds(1)).to_string();
    return "error: unknown request '" + request.substr(0, 64) +
           "'; ask for metrics, openmetrics, dump, dump text or lost\n";
}

scheduler_setup runtime_core::make_setup() {
    scheduler_setup s;
    const unsigned n = static_cast<unsigned>(plan_.report.workers.size());
    s.workers = n;
    s.driver = &drivers_;
    s.context = &ctx_;
    if (cfg_.flavor == runtime_flavor::current_thread && cfg_.start_paused) {
        // Tokio's auto-advance, held back while blocking work runs (its result may be what
        // the timers race).
        s.auto_advance = [this] {
            const blocking_pool::stats b = blocking_.snapshot();
            if (b.threads - b.idle + b.queued > 0) return false;
            return timers_.advance_to_next();
        };
    }
    if (!plan_.placed) return s;
    s.on_worker_start = [this](unsigned i) { bind_worker(i); };
    if (std::any_of(plan_.memory_kernel_node.begin(), plan_.memory_kernel_node.end(),
                    [](int node) { return node >= 0; })) {
        // N3: the worker's state, ring included, on its own node when the kernel has several.
        s.worker_memory = [this](unsigned i, std::size_t bytes) -> void* {
            const int node = plan_.memory_kernel_node[i];
            if (node < 0) return nullptr;
            worker_placement& wp = plan_.report.workers[i];
            void* mem = os::alloc_on_node(bytes, node);
            if (mem) {
                wp.memory_bound = true;
            } else {
                wp.note += (wp.note.empty() ? "" : "; ") +
                           std::string("node-local allocation on node ") + std::to_string(node) +
                           " failed; default allocation";
            }
            return mem;
        };
        s.release_worker_memory = [](void* p, std::size_t bytes) { os::free_on_node(p, bytes); };
    }
    // Placed workers know how far every other worker is (steal counters) and, with NUMA-aware
    // stealing, walk their victims nearest tier first (N4).
    s.distances.resize(n);
    for (unsigned i = 0; i < n; ++i) {
        s.distances[i].resize(n);
        for (unsigned j = 0; j < n; ++j) {
            s.distances[i][j] =
                static_cast<std::uint8_t>(topo::distance_between(plan_.sites[i], plan_.sites[j]));
        }
        if (cfg_.topology.numa_stealing) {
            s.tiers.push_back(
                topo::tiers_for(plan_.sites, i, BLITZ_FAULT(cfg_.debug.steal_ignores_nodes)));
        }
    }
    return s;
}

void runtime_core::bind_worker(unsigned index) noexcept {
    worker_placement& wp = plan_.report.workers[index];
    const int cpu = plan_.bind_cpu[index];
    if (cpu >= 0) {
        const std::string err = os::bind_this_thread(static_cast<unsigned>(cpu));
        wp.observed_cpus = os::this_thread_cpus();
        // N1, from inside the thread: the kernel's own view must be exactly the PU bound.
        wp.bound =
            err.empty() && wp.observed_cpus == std::vector<unsigned>{static_cast<unsigned>(cpu)};
        if (!err.empty()) {
            wp.note = "cannot bind to PU " + std::to_string(cpu) + ": " + err;
        } else if (!wp.bound) {
            wp.note = "bound to PU " + std::to_string(cpu) + " but sched_getaffinity reports " +
                      std::to_string(wp.observed_cpus.size()) + " CPUs";
        }
    } else {
        wp.observed_cpus = os::this_thread_cpus();
    }
    start_latch_->count_down();  // release: the report entry above is complete
}

void runtime_core::await_binding() {
    start_latch_->wait();  // acquire: every worker's report entry is visible
    if (!plan_.report.synthetic) {
        for (unsigned i = 0; i < plan_.report.workers.size(); ++i) {
            plan_.report.workers[i].memory_node_observed = os::node_of(&sched_.worker_at(i));
        }
    }
    if (cfg_.topology.best_effort) return;
    for (const worker_placement& wp : plan_.report.workers) {
        if (plan_.bind_cpu[wp.worker] >= 0 && !wp.bound) {
            const std::string msg = "worker " + std::to_string(wp.worker) + ": " + wp.note +
                                    " (set topology.best_effort to run unbound)";
            shutdown();
            throw topology_error(msg);
        }
    }
}

runtime_core::~runtime_core() {
    try {
        shutdown();
    } catch (const std::exception& e) {
        // Destroying a runtime from one of its own tasks, or a failed thread join: there is no
        // way to finish the destructor correctly, so fail loudly instead of terminating mutely.
        std::fprintf(stderr, "blitz: fatal: runtime destroyed incorrectly: %s\n", e.what());
        std::abort();
    }
}

void runtime_core::shutdown() {
    if (sched_.own_worker()) {
        throw std::logic_error("blitz: a runtime cannot be shut down from one of its own tasks");
    }
    if (inspect_) inspect_->stop();  // no request reaches a stopping runtime
    // The blocking pool first, while the workers still run: queued jobs are cancelled, running
    // ones finish and wake their tasks normally, and no pool thread outlives the runtime.
    blocking_.shutdown();
    sched_.shutdown();
    if (io_) io_->shutdown();
}

runtime_metrics runtime_core::metrics() const {
    runtime_metrics m = sched_.metrics();
    m.timers_fired = timers_.fired_total();
    m.timers_pending = timers_.pending();
    m.timer_cascades = timers_.cascades();
    m.timer_lock_waits = timers_.lock_waits();
    const blocking_pool::stats b = blocking_.snapshot();
    m.blocking_threads = b.threads;
    m.blocking_idle = b.idle;
    m.blocking_queued = b.queued;
    m.blocking_peak_threads = b.peak_threads;
    m.blocking_spawned_threads = b.spawned_threads;
    m.io_backend = io_ ? io_->backend_name() : "none";
    m.io_backend_reason = io_reason_;
    m.io_mode = to_string(cfg_.io_mode);
    if (io_) {
        const unsigned n = static_cast<unsigned>(plan_.report.workers.size());
        m.io_rings =
            std::string(io_->completion_ops() ? "one io_uring ring (" : "one epoll instance (") +
            std::to_string(cfg_.io_entries) + " entries) shared by " + std::to_string(n) +
            (n == 1 ? " worker" : " workers");
        if (io_->coop_taskrun()) m.io_rings += ", COOP_TASKRUN with TASKRUN_FLAG";
        if (io_->sqpoll_cpu() >= 0) {
            m.io_rings += ", SQPOLL thread on CPU " + std::to_string(io_->sqpoll_cpu());
        }
        if (cfg_.napi_busy_poll.count() != 0) {  // the driver registered it or refused to start
            m.io_rings += ", NAPI busy poll " + std::to_string(cfg_.napi_busy_poll.count()) + " us";
        }
        if (io_->file_ring()) m.io_rings += "; file operations on an io_uring ring";
        if (!io_->worker_rings_text().empty()) m.io_rings += "; " + io_->worker_rings_text();
    } else {
        m.io_rings = "none";
    }
    if (io_) {
        const io_driver_stats st = io_->stats();
        m.io_turns = st.turns;
        m.io_events = st.events;
        m.io_registrations = st.registrations;
        m.io_registered = st.live;
        m.io_wait_calls = st.waits;
        m.io_submit_calls = st.submits;
        m.io_wake_calls = st.wakes;
        m.io_wake_reads = st.wake_reads;
        m.io_ops = st.ops;
        m.io_ops_in_flight = st.ops_in_flight;
        m.io_ops_orphaned = st.ops_orphaned;
        m.io_orphan_bytes_kept = st.orphan_bytes_kept;
        m.io_deferred_closes = st.deferred_closes;
        m.io_stale_completions = st.stale_completions;
        m.io_worker_ring_ops = st.worker_ring_ops;
        m.io_worker_ring_handed_cancels = st.worker_ring_handed_cancels;
        m.io_worker_ring_enters = st.worker_ring_enters;
        m.io_worker_ring_submits = st.worker_ring_submits;
        m.io_worker_ring_wakes = st.worker_ring_wakes;
        m.io_pool = st.pool_buffers ? "ring: " + std::to_string(st.pool_buffers) + " x " +
                                          std::to_string(io_->pool_buffer_size()) + " B"
                                    : io_->pool_reason();
        if (st.pool_buffers && io_->has_worker_rings()) {
            m.io_pool += " in all (the shared ring's pool and one per worker ring)";
        }
        m.io_pool_buffers = st.pool_buffers;
        m.io_pool_out = st.pool_out;
        m.io_pool_arms = st.pool_arms;
        m.io_pool_chunks = st.pool_chunks;
        m.io_pool_enobufs = st.pool_enobufs;
        m.io_pool_fallbacks = st.pool_fallbacks;
        m.io_send_zc = st.send_zc;
        m.io_linked_timeouts = st.linked_timeouts;
        m.socket_busy_poll_set = st.socket_busy_poll_set;
        m.socket_busy_poll_failed = st.socket_busy_poll_failed;
        m.socket_busy_poll_error = st.socket_busy_poll_error;
    }
    return m;
}

}  // namespace blitz::detail
