// SPDX-License-Identifier: MIT
#include "sched/scheduler.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>

#include "base/rng.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/detail/inspect.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "task/alloc_stats.hpp"
#include "task/context_internal.hpp"
#include "task/site_table.hpp"

namespace blitz::detail {

static_assert(config::max_workers == idle_state::max_workers,
              "the configuration's worker limit is the idle bitmap's (I7)");

namespace {
// Live schedulers, for snapshot_live_schedulers() only (construction and destruction register).
struct live_registry {
    mutex mu;
    std::vector<const scheduler*> all BLITZ_GUARDED_BY(mu);
};
live_registry& live() {
    static live_registry* r = new live_registry;  // leaked: outlives every scheduler
    return *r;
}
}  // namespace

std::vector<scheduler_snapshot> snapshot_live_schedulers() {
    live_registry& r = live();
    lock_guard l(r.mu);
    std::vector<scheduler_snapshot> out;
    for (const scheduler* s : r.all) out.push_back(s->snapshot());
    return out;
}

scheduler_snapshot scheduler::snapshot() const {
    scheduler_snapshot v;
    for (unsigned i = 0; i < nworkers_; ++i) {
        const worker_metrics m = workers_[i]->snapshot();
        v.workers.push_back({((idle_.bitmap_of(i) >> (i % 64)) & 1) != 0, m.polls, m.ticks});
    }
    v.global_len = global_.len();
    v.searching = idle_.num_searching();
    return v;
}

scheduler::scheduler(const config& cfg, scheduler_setup setup)
    : task_scheduler(/*unlisted_are_mine=*/true, /*is_runtime_scheduler=*/true),
      cfg_(cfg),
      setup_(std::move(setup)),
      nworkers_(setup_.workers),
      first_list_id_(task_list::reserve_ids(std::max(nworkers_, 1u))),
      driver_(setup_.driver),
      idle_(nworkers_, cfg.limit_searchers,
            idle_faults{BLITZ_FAULT(cfg.debug.claim_highest_parked),
                        BLITZ_FAULT(cfg.debug.wake_despite_searchers)}) {
    assert(driver_ != nullptr);
    global_.set_fault_locked_empty(BLITZ_FAULT(cfg.debug.locked_global_empty));
    global_.set_fault_locked_push(BLITZ_FAULT(cfg.debug.locked_global_push));
    make_workers();
    // The stall detector exists before the workers start (they ask it whether it dozes), and
    // starts after them.
    if (inspect_enabled && cfg_.stall_threshold.count() > 0 && nworkers_ > 0)
        watchdog_ = std::make_unique<stall_watchdog>(*this);
    // A current-thread scheduler starts no thread: its worker waits, parked, for a drive.
    if (current_thread()) workers_[0]->start_parked();
    const unsigned threads = current_thread() ? 0 : nworkers_;
    threads_.reserve(threads);
    unsigned started = 0;
    try {
        for (; started < threads; ++started) {
            if (BLITZ_INJECTED_FAILURE(worker_thread)) {  // faults build only
                throw std::system_error(
                    std::make_error_code(std::errc::resource_unavailable_try_again),
                    "injected failure");
            }
            threads_.emplace_back([w = workers_[started].get()] { w->run(); });
        }
    } catch (const std::system_error& e) {
        shutdown();  // joins the workers already started: no thread is left behind
        throw std::system_error(e.code(), "blitz::runtime: cannot start worker thread " +
                                              std::to_string(started + 1) + " of " +
                                              std::to_string(nworkers_));
    } catch (...) {
        shutdown();
        throw;
    }
    if (watchdog_) {
        try {
            watchdog_->start();
        } catch (...) {
            shutdown();  // stopping a watchdog that never started is a no-op
            throw;
        }
    }
    live_registry& r = live();
    lock_guard l(r.mu);
    r.all.push_back(this);
}

void scheduler::make_workers() {
    workers_.reserve(nworkers_);
    const std::uint64_t base =
        cfg_.seed != 0 ? cfg_.seed
                       : reinterpret_cast<std::uintptr_t>(this) ^
                             static_cast<std::uint64_t>(
                                 std::chrono::steady_clock::now().time_since_epoch().count());
    for (unsigned i = 0; i < nworkers_; ++i) {
        std::unique_ptr<worker, worker_free> w;
        if (setup_.worker_memory) {
            if (void* mem = setup_.worker_memory(i, sizeof(worker))) {
                try {
                    w = std::unique_ptr<worker, worker_free>(
                        new (mem) worker(*this, i, mix_seed(base + i), list_id(i)),
                        worker_free{&setup_.release_worker_memory});
                } catch (...) {
                    setup_.release_worker_memory(mem, sizeof(worker));
                    throw;
                }
            }
        }
        if (!w) {
            w = std::unique_ptr<worker, worker_free>(
                new worker(*this, i, mix_seed(base + i), list_id(i)));
        }
        workers_.push_back(std::move(w));
        homes_.push_back(std::make_unique<pinned_home>(*this, i));
    }
    for (unsigned i = 0; i < nworkers_ && i < setup_.distances.size(); ++i) {
        workers_[i]->set_distances(setup_.distances[i]);
    }
    for (unsigned i = 0; i < nworkers_ && i < setup_.tiers.size(); ++i) {
        workers_[i]->set_victim_tiers(setup_.tiers[i]);
    }
}

void scheduler::worker_free::operator()(worker* w) const noexcept {
    if (!release || !*release) {
        delete w;
        return;
    }
    w->~worker();
    (*release)(w, sizeof(worker));
}

void scheduler::on_worker_start(unsigned index) noexcept {
    set_current_runtime(setup_.context);
    if (setup_.on_worker_start) setup_.on_worker_start(index);
}

void scheduler::on_worker_stop() noexcept { set_current_runtime(nullptr); }

scheduler::~scheduler() {
    {
        live_registry& r = live();
        lock_guard l(r.mu);
        const auto it = std::find(r.all.begin(), r.all.end(), this);
        if (it != r.all.end()) r.all.erase(it);
    }
    try {
        shutdown();
    } catch (const std::exception& e) {
        // Destroying a runtime from one of its own tasks, or a failed thread join: there is no
        // way to finish the destructor correctly, so fail loudly instead of terminating mutely.
        std::fprintf(stderr, "blitz: fatal: runtime destroyed incorrectly: %s\n", e.what());
        std::abort();
    }
}

// A worker's own spawns and wakes (L1, I9). Defined here, beside its only caller
// (schedule_from), so that a spawn compiles into one function from spawn_on to the queues.
inline void worker::schedule_local(task_header* t, bool is_yield) noexcept {
    if (collecting()) {
        if (collected_n_ == collect_capacity) flush_collected();
        collected_[collected_n_++] = t;
        return;
    }
    if (is_yield) {
        requeue_given_back(t);
        return;
    }
    if (lifo_cap_ == 0) {
        push_ring(t);
        if (!BLITZ_FAULT(cfg_.debug.no_wake_on_local_push)) sched_.notify_parked_for_local();
        return;
    }
    bump(c_spawned_local);
    task_header* prev = std::exchange(lifo_, t);  // L1: newest in the slot, previous to the ring
    if (prev) {
        push_ring(prev);  // I9: visible to thieves now, so a parked worker may help
        if (!BLITZ_FAULT(cfg_.debug.no_wake_on_local_push)) sched_.notify_parked_for_local();
    }
}

[[gnu::always_inline]] inline void scheduler::spawn_here(task_header* t) noexcept {
    if (shutting_down()) {
        // Too late to run: complete it as cancelled right away (drop the queue and list
        // references it was given; the join handle keeps its own). Its frame's destructors
        // may spawn in turn, and get the same.
        draining_scope d(setup_.context);
        t->complete(/*cancelled=*/true, 1);  // and the reserved list reference (release)
        return;
    }
    // No list yet (lazy listing, K3): the task is in a queue, where shutdown finds it, until a
    // poll leaves it suspended and the polling worker lists it (list). Most tasks of a fan-out
    // or a chain complete in their first poll and never touch a list.
    worker* const w = own_worker();
    if (w) {
        w->count_spawn();
    } else {
        foreign_spawned_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    }
    schedule_from(w, t, /*is_yield=*/false);
}

void scheduler::spawn(task_header* t) noexcept { spawn_here(t); }

// The runtime's scheduler is called directly (the class is final), not through the vtable. A
// spawn into the spawning worker's free LIFO slot is compiled into this function, which then
// calls nothing (so it saves no registers); every other case goes on in scheduler::spawn.
// The fast path does not look at shutdown: a worker's spawn lands in its own LIFO slot, which
// the worker may still poll in its last tick, as it polls the tasks already queued, and which
// the shutdown drain empties after the workers stopped (K3). Only a spawn where no worker will
// ever run it (the shutdown thread's, from a frame's destructor) must be cancelled at once,
// and that one has no worker of its own, so it takes scheduler::spawn.
void submit_spawn(task_scheduler* s, task_header* t, std::coroutine_handle<> root,
                  std::source_location site) noexcept {
    t->init_spawned(s, root, inspect_enabled ? spawn_site_index(site) : 0);
    if (s->is_runtime_scheduler()) [[likely]] {
        auto* sc = static_cast<scheduler*>(s);
        worker* const w = sc->own_worker();
        if (w != nullptr && w->spawn_into_free_slot(t)) [[likely]]
            return;
        sc->scheduler::spawn(t);
        return;
    }
    s->spawn(t);  // another task_scheduler (the model harnesses)
}

// ---- pinned tasks (P1) ----

void scheduler::spawn_pinned(task_header* t, unsigned home) noexcept {
    if (shutting_down()) {
        draining_scope d(setup_.context);
        t->complete(/*cancelled=*/true, 1);  // as spawn_here: too late to run
        return;
    }
    if (worker* const w = own_worker()) {
        w->count_spawn();
    } else {
        foreign_spawned_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    }
    place_pinned(t, home);
}

void scheduler::place_pinned(task_header* t, unsigned home) noexcept {
    worker* const w = own_worker();
    // P1's control: a pinned task's queue entries go where any task's would (a LIFO slot, a
    // ring, the global queue), so thieves and other workers' fetches can take it.
    if (BLITZ_FAULT(cfg_.debug.pinned_tasks_migrate)) {
        schedule_from(w, t, /*is_yield=*/false);
        return;
    }
    if (w == workers_[home].get()) {
        w->push_pinned_here(t);
    } else {
        workers_[home]->push_pinned_remote(t);
    }
}

void pinned_home::spawn(task_header* t) noexcept { s_.spawn_pinned(t, home_); }
void pinned_home::list(task_header* t) noexcept { s_.list(t); }
void pinned_home::schedule(task_header* t, bool) noexcept { s_.place_pinned(t, home_); }
task_scheduler::released pinned_home::release(task_header* t) noexcept { return s_.release(t); }
void pinned_home::hand_back(task_header* t) noexcept { s_.hand_back(t); }
void pinned_home::unhandled_exception(task_header* t) noexcept { s_.unhandled_exception(t); }
bool pinned_home::run_until_complete(task_header* t) noexcept { return s_.run_until_complete(t); }

void scheduler::schedule(task_header* t, bool is_yield) noexcept {
    worker* const w = own_worker();
    if (inspect_enabled && w && !is_yield) w->sample_wake(t);
    schedule_from(w, t, is_yield);
}

// A wake on a worker's own thread (scheduler::schedule, its only caller).
inline void worker::sample_wake(const task_header* t) noexcept {
    // An I/O wake (made while the driver dispatches events for this worker) is followed
    // whenever the slot is free, as they are fewer than the task wakes sampled one in 16.
    if (tl_io_dispatch && collecting()) [[unlikely]] {
        if (followed_ == nullptr) follow_wake(t, /*io=*/true);
        return;
    }
    if (--wake_countdown_ != 0) [[likely]]
        return;
    wake_countdown_ = wake_sample_every;
    if (followed_ == nullptr) follow_wake(t, /*io=*/false);
}

// Out of line, so that schedule() saves no registers for the clock's call.
void worker::follow_wake(const task_header* t, bool io) noexcept {
    followed_ = t;
    followed_polls_ = dump_access::polls(t);
    followed_at_ = clock_.now();
    followed_io_ = io;
}

void scheduler::schedule_from(worker* w, task_header* t, bool is_yield) noexcept {
    if (w && w->accepts_local()) {
        w->schedule_local(t, is_yield);
        return;
    }
    global_.push(t);
    notify_parked(/*pushed_by_rmw=*/true);  // the push raised the length with a seq_cst RMW
}

bool scheduler::notify_parked(bool pushed_by_rmw) noexcept {
    unsigned searching_seen = 0;
    // I3: a searcher, or nobody parked
    if (!idle_.should_notify(&searching_seen, pushed_by_rmw)) return false;
    if (auto c = idle_.claim_parked()) {
        if ([[maybe_unused]] worker* const w = own_worker()) {
            BLITZ_PROBE(*w, probe_kind::wake_claim, c->index, c->chosen_from, searching_seen);
        }
        workers_[c->index]->unpark();
        return true;
    }
    return false;
}

bool scheduler::work_pending() const noexcept {
    if (!global_.empty()) return true;
    for (const auto& w : workers_) {
        if (!w->ring().empty()) return true;
    }
    return false;
}

void scheduler::list(task_header* t) noexcept {
    worker* w = own_worker();
    assert(w && "a task polled off its runtime's workers");
    if (!BLITZ_FAULT(cfg_.debug.suspended_tasks_unlisted)) w->own(t);
}

task_scheduler::released scheduler::release(task_header* t) noexcept {
    // Never listed (it completed in a poll that found it in no list, or was cancelled before
    // its first): the reserved list reference is the caller's to drop.
    if (!task_list::listed(t)) return released::mine;
    worker* w = own_worker();
    if (w && w->disown(t)) return released::mine;
    return released::elsewhere;
}

void scheduler::hand_back(task_header* t) noexcept {
    const unsigned owner = task_list::owner_of(t) - first_list_id_;
    assert(owner < nworkers_ && "a task listed by another runtime's worker");
    workers_[owner]->hand_back(t);
}

void scheduler::unhandled_exception(task_header* t) noexcept {
    std::exception_ptr e = t->stored_exception();
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
    if (own_worker()) {
        throw std::logic_error("blitz: a runtime cannot be shut down from one of its own tasks");
    }
    shutdown_.store(true, std::memory_order_release);  // release: pairs with shutting_down()
    for (auto& w : workers_) w->unpark();
    for (auto& th : threads_) {
        if (th.joinable()) th.join();
    }
    if (current_thread()) {
        // The driving thread, if any, leaves its drive at its next look; no drive starts after
        // this (the core stays taken).
        std::unique_lock l(core_mu_);
        ++core_waiters_;
        core_cv_.wait(l, [&] { return !core_taken_; });
        --core_waiters_;
        core_taken_ = true;
    }
    joined_ = true;
    // The watchdog watched the shutdown too (a worker stuck in a poll holds it up); it stops
    // once every worker left its run loop, so it never signals a thread that has exited.
    if (watchdog_) watchdog_->stop();
    cancel_all_and_drain();
}

const waker_vtable scheduler::core_waker_vtable{&scheduler::wake_core, &scheduler::wake_core,
                                                &scheduler::keep_core_waker,
                                                &scheduler::drop_core_waker};

void scheduler::wake_core(void* self) {
    auto* s = static_cast<scheduler*>(self);
    {
        std::lock_guard l(s->core_mu_);
        if (s->core_waiters_ != 0) s->core_cv_.notify_all();
    }
    // On the driving thread the drive sees the completion after this poll.
    if (!s->own_worker()) s->workers_[0]->unpark();
}

bool scheduler::run_until_complete(task_header* t) noexcept {
    if (!current_thread()) return false;
    // The waker's data is this scheduler, which outlives every task of its own (the shutdown
    // completes them all before it returns): nothing to count.
    if (!t->set_join_waker(waker(this, &core_waker_vtable))) return true;  // complete already
    std::unique_lock l(core_mu_);
    for (;;) {
        if (t->is_complete()) return true;
        if (!core_taken_) break;
        ++core_waiters_;
        core_cv_.wait(l);
        --core_waiters_;
    }
    core_taken_ = true;
    l.unlock();
    workers_[0]->drive(t);
    l.lock();
    give_core_back();
    // Shutdown began during the drive: `t` completes in its drain, and its waker notifies.
    if (!t->is_complete()) {
        ++core_waiters_;
        core_cv_.wait(l, [&] { return t->is_complete(); });
        --core_waiters_;
    }
    return true;
}

void scheduler::answer_dump_undriven() {
    std::unique_lock l(core_mu_);
    if (core_taken_) return;  // the driver answers at its next tick (ask_dump unparked it)
    core_taken_ = true;
    l.unlock();
    workers_[0]->answer_dump();
    l.lock();
    give_core_back();
}

void scheduler::give_core_back() {
    core_taken_ = false;
    if (core_waiters_ != 0) core_cv_.notify_all();
}

void scheduler::cancel_all_and_drain() noexcept {
    draining_scope d(setup_.context);  // destructors that spawn get cancelled handles
    // Single-threaded from here. Cancelling runs destructors, which may wake other tasks (their
    // queue entries land in the global queue) or drop the last reference of others; loop until
    // every list and every queue is empty.
    for (;;) {
        bool any = false;
        // First what completed elsewhere and waits in an inbox: those tasks leave their lists
        // before the lists are emptied below (each is in both until then).
        for (auto& w : workers_) w->reclaim_returned();
        auto cancel = [&](task_header* t) {
            any = true;
            t->cancel_for_shutdown();
            t->unref();  // the list's reference; a queue entry keeps its own
        };
        for (auto& w : workers_) {
            while (task_header* t = w->pop_owned()) cancel(t);
        }
        auto drop = [&](task_header* t) {
            any = true;
            if (!task_list::listed(t) && !t->is_complete()) {
                // Spawned from outside and never fetched: no list holds it, so it is cancelled
                // here, and its reserved list reference goes with the queue entry's.
                t->cancel_for_shutdown();
                t->unref(2);
                return;
            }
            t->unref();  // the queue entry's reference
        };
        for (auto& w : workers_) w->drain(drop);
        if (!BLITZ_FAULT(cfg_.debug.shutdown_skips_global_queue)) {
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

runtime_dump scheduler::dump(std::chrono::nanoseconds wait) {
    if constexpr (!inspect_enabled) {
        throw std::logic_error(
            "blitz: runtime::dump: this build has inspection compiled out (BLITZ_INSPECT=0)");
    }
    // One dump at a time: a worker's slot holds one request (a second dumper waits here; one
    // asking from inside a task waits at most the first one's wait for its own worker).
    std::lock_guard<std::mutex> one_at_a_time(dump_mu_);
    runtime_dump out;
    out.taken_at = std::chrono::steady_clock::now();
    out.queued_in_run_queues = global_.len();
    for (const auto& w : workers_) out.queued_in_run_queues += w->ring().len();
    auto* r = new dump_request(nworkers_);
    for (auto& w : workers_) w->ask_dump(r);
    // Asked from inside one of this runtime's tasks: this worker answers at once (between the
    // polls of its own list; the task asking shows as running).
    if (worker* self = own_worker()) self->answer_dump();
    // A current-thread runtime nobody drives: its worker's state waits for the next drive, and
    // this thread may read it meanwhile (it holds the core while it does).
    if (current_thread() && !own_worker()) answer_dump_undriven();
    std::vector<task_record> records;
    {
        std::unique_lock<std::mutex> lock(r->m);
        const auto all_answered = [&] {
            return std::all_of(r->answered.begin(), r->answered.end(), [](bool a) { return a; });
        };
        r->done.wait_for(lock, wait, all_answered);
        for (unsigned i = 0; i < nworkers_; ++i) {
            if (r->answered[i]) continue;
            // Not answered yet: never started (take the request back, and its reference), or
            // answering now (it finishes in bounded time; wait for it).
            lock.unlock();
            dump_request* back = workers_[i]->take_back_dump();
            lock.lock();
            if (back) {
                out.workers_not_answering.push_back(i);
                r->answered[i] = true;  // nobody will
                lock.unlock();
                back->ref_drop();
                lock.lock();
            } else {
                r->done.wait(lock, [&] { return bool(r->answered[i]); });
            }
        }
        records = std::move(r->records);
    }
    r->ref_drop();
    finish_dump(records, out);
    return out;
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
    m.parked_bitmap.resize(idle_.bitmap_words());
    for (unsigned k = 0; k < idle_.bitmap_words(); ++k) m.parked_bitmap[k] = idle_.bitmap_word(k);
    if (watchdog_) {
        m.stall_samples = watchdog_->samples();
        m.stalls = watchdog_->detected();
        m.stalls_suppressed = watchdog_->suppressed();
        m.longest_stall_ns = watchdog_->longest_ns();
        m.stall_doze_samples = watchdog_->doze_samples();
        m.stall_nudges = watchdog_->nudges();
        for (unsigned i = 0; i < nworkers_; ++i) m.workers[i].stalls = watchdog_->detected_on(i);
    }
    return m;
}

}  // namespace blitz::detail
