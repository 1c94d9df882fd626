// SPDX-License-Identifier: MIT
#include "sched/scheduler.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "blitz/detail/context.hpp"
#include "base/rng.hpp"
#include "task/alloc_stats.hpp"
#include "task/context_internal.hpp"
#include "base/os.hpp"

namespace blitz::detail {
namespace {

blocking_pool::options blocking_options(const config& cfg, const topo::plan& plan) {
    blocking_pool::options o;
    o.max_threads = cfg.blocking_threads_max;
    o.keep_alive = cfg.blocking_keep_alive;
    o.fault_ignore_cap = cfg.debug.blocking_ignores_cap;
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

}  // namespace

scheduler::scheduler(const config& cfg)
    : cfg_(cfg),
      plan_(topo::make_plan(cfg)),
      nworkers_(static_cast<unsigned>(plan_.report.workers.size())),
      timers_(cfg.start_paused, cfg.debug.timers_fire_early),
      blocking_(blocking_options(cfg, plan_)),
      idle_(nworkers_, cfg.limit_searchers,
            idle_faults{cfg.debug.claim_highest_parked, cfg.debug.wake_despite_searchers}) {
    global_.set_fault_locked_empty(cfg.debug.locked_global_empty);
    make_workers();
    if (plan_.placed) start_latch_ = std::make_unique<std::latch>(nworkers_);
    threads_.reserve(nworkers_);
    try {
        for (unsigned i = 0; i < nworkers_; ++i) {
            threads_.emplace_back([w = workers_[i].get()] { w->run(); });
        }
    } catch (...) {
        // Threads that never started cannot count down: release the latch for them.
        if (start_latch_) start_latch_->count_down(nworkers_ - static_cast<unsigned>(threads_.size()));
        shutdown();
        throw;
    }
    if (start_latch_) await_binding();
}

void scheduler::make_workers() {
    workers_.reserve(nworkers_);
    const std::uint64_t base =
        reinterpret_cast<std::uintptr_t>(this) ^
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (unsigned i = 0; i < nworkers_; ++i) {
        worker_placement& wp = plan_.report.workers[i];
        // N3: the worker's state, ring included, on its own node when the kernel has several.
        std::unique_ptr<worker, worker_free> w;
        if (const int node = plan_.memory_kernel_node[i]; node >= 0) {
            if (void* mem = os::alloc_on_node(sizeof(worker), node)) {
                try {
                    w = std::unique_ptr<worker, worker_free>(
                        new (mem) worker(*this, i, mix_seed(base + i)), worker_free{true});
                } catch (...) {
                    os::free_on_node(mem, sizeof(worker));
                    throw;
                }
                wp.memory_bound = true;
            } else {
                wp.note += (wp.note.empty() ? "" : "; ") + std::string("node-local allocation on node ") +
                           std::to_string(node) + " failed; default allocation";
            }
        }
        if (!w) w = std::unique_ptr<worker, worker_free>(new worker(*this, i, mix_seed(base + i)));
        if (plan_.placed && !plan_.report.synthetic) wp.memory_node_observed = os::node_of(w.get());
        workers_.push_back(std::move(w));
    }
    if (!plan_.placed) return;
    // Placed workers know how far every other worker is (steal counters) and, with NUMA-aware
    // stealing, walk their victims nearest tier first (N4).
    for (unsigned i = 0; i < nworkers_; ++i) {
        std::vector<std::uint8_t> d(nworkers_);
        for (unsigned j = 0; j < nworkers_; ++j) {
            d[j] = static_cast<std::uint8_t>(topo::distance_between(plan_.sites[i], plan_.sites[j]));
        }
        workers_[i]->set_distances(std::move(d));
        if (cfg_.topology.numa_stealing) {
            workers_[i]->set_victim_tiers(
                topo::tiers_for(plan_.sites, i, cfg_.debug.steal_ignores_nodes));
        }
    }
}

void scheduler::worker_free::operator()(worker* w) const noexcept {
    if (!node_local) {
        delete w;
        return;
    }
    w->~worker();
    os::free_on_node(w, sizeof(worker));
}

void scheduler::on_worker_start(unsigned index) noexcept {
    if (!start_latch_) return;
    worker_placement& wp = plan_.report.workers[index];
    const int cpu = plan_.bind_cpu[index];
    if (cpu >= 0) {
        const std::string err = os::bind_this_thread(static_cast<unsigned>(cpu));
        wp.observed_cpus = os::this_thread_cpus();
        // N1, from inside the thread: the kernel's own view must be exactly the PU bound.
        wp.bound = err.empty() && wp.observed_cpus == std::vector<unsigned>{static_cast<unsigned>(cpu)};
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

void scheduler::await_binding() {
    start_latch_->wait();  // acquire: every worker's report entry is visible
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

scheduler::~scheduler() {
    try {
        shutdown();
    } catch (const std::exception& e) {
        // Destroying a runtime from one of its own tasks, or a failed thread join: there is no
        // way to finish the destructor correctly, so fail loudly instead of terminating mutely.
        std::fprintf(stderr, "blitz: fatal: runtime destroyed incorrectly: %s\n", e.what());
        std::abort();
    }
}

void scheduler::spawn(task_header* t) noexcept {
    if (shutting_down()) {
        // Too late to run: complete it as cancelled right away (drop the queue and list
        // references it was given; the join handle keeps its own). Its frame's destructors
        // may spawn in turn, and get the same.
        draining_scope d(this);
        complete_task(t, /*cancelled=*/true, 2);
        return;
    }
    worker* w = current_worker();
    if (w && &w->sched() == this) {
        w->own(t);
    } else {
        std::lock_guard<std::mutex> l(foreign_mu_);
        foreign_tasks_.push(t);
        // relaxed: a statistic, written under the lock
        foreign_spawned_.store(foreign_spawned_.load(std::memory_order_relaxed) + 1,
                               std::memory_order_relaxed);
    }
    schedule(t, /*is_yield=*/false);
}

void scheduler::schedule(task_header* t, bool is_yield) noexcept {
    worker* w = current_worker();
    if (w && &w->sched() == this && w->accepts_local()) {
        w->schedule_local(t, is_yield);
        return;
    }
    global_.push(t);
    notify_parked();
}

void scheduler::notify_parked() noexcept {
    unsigned searching_seen = 0;
    if (!idle_.should_notify(&searching_seen)) return;  // I3: a searcher exists, or nobody sleeps
    if (auto c = idle_.claim_parked()) {
        worker* const w = current_worker();
        if (w && &w->sched() == this) {
            BLITZ_PROBE(*w, probe_kind::wake_claim, c->index, c->chosen_from, searching_seen);
        }
        workers_[c->index]->unpark();
    }
}

bool scheduler::work_pending() const noexcept {
    if (!global_.empty()) return true;
    for (const auto& w : workers_) {
        if (!w->ring().empty()) return true;
    }
    return false;
}

void scheduler::complete_task(task_header* t, bool cancelled, std::uint32_t refs_to_drop) noexcept {
    // Completed or cancelled, the frame goes now: its locals and by-value parameters (a channel
    // sender, a lock guard) are released at completion, as with Tokio. The result stays in its
    // slot in front of the header; the memory stays until the last reference.
    t->destroy_frame();
    const std::uint64_t prev = t->transition_to_complete(cancelled);
    t->wake_join_waiter(prev);
    // Failed with nobody to tell: the handle was dropped or detached before this.
    if (t->failed_ && !cancelled && !(prev & state::join_interest)) [[unlikely]] report_unhandled(t);
    // Completed on the worker that spawned it: out of that worker's list now, so the list's
    // reference goes with the queue's and the memory is reused at once. (A task completed on
    // another worker stays listed until its owner sweeps: the list has no lock.)
    if (worker* w = current_worker(); w && &w->sched() == this && w->disown(t)) ++refs_to_drop;
    t->unref(refs_to_drop);
}

void scheduler::report_unhandled(task_header* t) noexcept {
    std::exception_ptr e = t->error_of_ ? t->error_of_(t->result_slot_) : nullptr;
    if (!e) return;  // K5's control dropped it
    if (cfg_.on_unhandled_exception) {
        try {
            cfg_.on_unhandled_exception(e);
        } catch (...) {
        }
    } else {
        const char* what = "(not a std::exception)";
        std::string msg;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            msg = x.what();
            what = msg.c_str();
        } catch (...) {
        }
        std::fprintf(stderr, "blitz: a task nobody awaits ended with an exception: %s\n", what);
    }
    if (cfg_.abort_on_unhandled_exception) std::abort();
}

void scheduler::shutdown() {
    if (joined_) return;
    if (current_worker() && &current_worker()->sched() == this) {
        throw std::logic_error("blitz: a runtime cannot be shut down from one of its own tasks");
    }
    // The blocking pool first, while the workers still run: queued jobs are cancelled, running
    // ones finish and wake their tasks normally, and no pool thread outlives the scheduler.
    blocking_.shutdown();
    shutdown_.store(true, std::memory_order_release);  // release: pairs with shutting_down()
    for (auto& w : workers_) w->unpark();
    for (auto& th : threads_) {
        if (th.joinable()) th.join();
    }
    joined_ = true;
    cancel_all_and_drain();
}

void scheduler::cancel_all_and_drain() noexcept {
    draining_scope d(this);  // destructors that spawn get cancelled handles
    // Single-threaded from here. Cancelling runs destructors, which may wake other tasks (their
    // queue entries land in the global queue) or drop the last reference of others; loop until
    // every list and every queue is empty.
    for (;;) {
        bool any = false;
        auto cancel = [&](task_header* t) {
            any = true;
            if (!t->is_complete()) {
                t->destroy_frame();
                const std::uint64_t prev = t->transition_to_complete(/*was_cancelled=*/true);
                t->wake_join_waiter(prev);
            }
            t->unref();  // the list's reference; a queue entry keeps its own
        };
        for (auto& w : workers_) {
            while (task_header* t = w->pop_owned()) cancel(t);
        }
        for (;;) {
            task_header* t;
            {
                std::lock_guard<std::mutex> l(foreign_mu_);
                t = foreign_tasks_.pop();
            }
            if (!t) break;
            cancel(t);  // outside the lock: destructors may spawn (and be cancelled at once)
        }
        auto drop = [&](task_header* t) {
            any = true;
            t->unref();  // the queue entry's reference
        };
        for (auto& w : workers_) w->drain(drop);
        if (!cfg_.debug.shutdown_skips_global_queue) {
            while (task_header* t = global_.pop()) drop(t);
        }
        if (!any) break;
    }
}

probe_streams scheduler::take_probes() {
    probe_streams p;
    p.workers.resize(nworkers_);
    for (unsigned i = 0; i < nworkers_; ++i) p.dropped += workers_[i]->take_probes(p.workers[i]);
    return p;
}

runtime_metrics scheduler::metrics() const {
    runtime_metrics m;
    m.workers.reserve(nworkers_);
    for (const auto& w : workers_) m.workers.push_back(w->snapshot());
    m.tasks_spawned = m.total(&worker_metrics::spawned) +
                      foreign_spawned_.load(std::memory_order_relaxed);  // relaxed: a statistic
    const alloc_stats::totals a = alloc_stats::read();
    m.task_allocations = a.allocs;
    m.task_bytes_allocated = a.bytes;
    m.tasks_alive = a.allocs - a.frees;
    m.global_queue_len = global_.len();
    m.global_lock_acquisitions = global_.lock_acquisitions();
    m.claims = idle_.claims();
    m.searcher_overshoots = idle_.overshoots();
    m.num_searching = idle_.num_searching();
    m.num_parked = idle_.num_parked();
    m.parked_bitmap = idle_.bitmap();
    m.timers_fired = timers_.fired_total();
    m.timers_pending = timers_.pending();
    m.timer_cascades = timers_.cascades();
    const blocking_pool::stats b = blocking_.snapshot();
    m.blocking_threads = b.threads;
    m.blocking_idle = b.idle;
    m.blocking_queued = b.queued;
    m.blocking_peak_threads = b.peak_threads;
    m.blocking_spawned_threads = b.spawned_threads;
    return m;
}

}  // namespace blitz::detail
