// SPDX-License-Identifier: MIT
#include "sched/worker.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "blitz/detail/faults.hpp"
#include "blitz/detail/inspect.hpp"
#include "sched/policy.hpp"
#include "sched/scheduler.hpp"
#include "task/block_cache.hpp"

namespace blitz::detail {

using clock = std::chrono::steady_clock;

worker::worker(scheduler& s, unsigned index, std::uint64_t seed, std::uint16_t list_id)
    : sched_(s),
      cfg_(s.cfg()),
      index_(index),
      busy_(s.cfg().io_mode == io_mode_kind::busy),
      clock_(cycle_clock::process()),
      budget_per_tick_(s.cfg().budget_per_tick),
      lifo_cap_(s.cfg().lifo_polls_per_tick),
      poll_budget_(s.cfg().coop_budget_per_poll ? static_cast<int>(s.cfg().coop_budget_per_poll)
                                                : -1),
      spin_(s.cfg().park_spin, s.cfg().park_spin_adaptive),
      avg_poll_ns_(static_cast<double>(s.cfg().initial_avg_poll.count())),
      rng_(seed),
      owned_(list_id) {
    for (auto& c : counters_) c.store(0, std::memory_order_relaxed);  // relaxed: not shared yet
    set_closed(closed_no_lifo, lifo_cap_ == 0);
#if BLITZ_PROBES
    if (cfg_.probes) probes_ = std::make_unique<probe_ring>(cfg_.probe_capacity);
#endif
    interval_ = interval_for(avg_poll_ns_, double(cfg_.global_target_latency.count()),
                             cfg_.global_interval_min, cfg_.global_interval_max);
    set(c_global_interval, interval_);
    set(c_avg_poll_ns, static_cast<std::uint64_t>(avg_poll_ns_));
    set(c_park_spin_budget_ns, static_cast<std::uint64_t>(spin_.budget_ns()));
}

[[gnu::always_inline]] inline bool worker::tick() noexcept {
    bump(c_ticks);
    BLITZ_PROBE(*this, probe_kind::tick_begin, 0,
                counters_[c_ticks].load(std::memory_order_relaxed));
    // L3 (issue 45): the LIFO count carries across the tick boundary, so a pair that
    // reached the cap on the last poll of a tick does not get the cap's polls again.
    if (BLITZ_FAULT(cfg_.debug.lifo_count_per_tick)) lifo_polls_ = 0;
    // Memory back at completion (issue 45): what completed elsewhere leaves the list now.
    if (!returned_.empty()) reclaim_returned();
    // Pinned tasks woken or spawned on other threads (P1) join the pinned FIFO.
    if (!pinned_inbox_.empty()) take_pinned_inbox();
    const std::int64_t start = clock_.now();
    if constexpr (inspect_enabled) {
        tick_ms_ = ms_of(start);
        // A task dump waits for this worker's tasks (issue 46): listed between polls.
        if (dump_slot_.load(std::memory_order_relaxed) != nullptr) [[unlikely]]
            answer_dump();
    }
    note_time(start);  // G8
    // A followed wake whose task was not polled here within a second was stolen (or waits
    // behind a stall the detector reports): let the slot follow another.
    if (inspect_enabled && followed_ && cycle_clock::since(followed_at_, start) > 1'000'000'000)
        [[unlikely]]
        followed_ = nullptr;
    // Maintenance at the start of every tick (B1): any worker fires due timers, so timers
    // keep firing while some other worker is stuck in a long poll (T6). I/O joins here
    // with the I/O driver.
    const bool skip_maintain =
        BLITZ_FAULT(cfg_.debug.timers_only_when_idle) && (lifo_ || given_back_ || !ring_.empty());
    set_closed(closed_collecting, true);
    const std::size_t fired = skip_maintain ? 0 : sched_.driver().maintain();
    set_closed(closed_collecting, false);
    flush_collected();
    if (fired) BLITZ_PROBE(*this, probe_kind::timer_fire, 0, fired);
    unsigned polls = 0;
    // Latency histograms: the index in this tick of the next poll that is timed (one poll in
    // poll_sample_every; a compare of two registers per poll; past the budget when none is
    // due in this tick).
    unsigned timed_at = poll_countdown_ - 1;
    while (polls < budget_per_tick_) {
        task_header* t = next_task();
        if (!t) t = search();
        if (!t) break;
        run_task(t, polls, timed_at);
        ++polls;
        if (polls % 8 == 0) note_time(clock_.now());  // G8: the clock every 8 polls
    }
    poll_countdown_ = timed_at - polls + 1;  // >= 1: no index below timed_at was missed
    if (polls == budget_per_tick_) bump(c_budget_exhaustions);
    if (polls > 0) sched_.driver().end_tick();
    if (polls > 0) {
        if (woke_by_timeout_) bump(c_timeout_wakes_found_work);
        woke_by_timeout_ = false;
        [[maybe_unused]] const std::uint64_t elapsed_ns = end_tick(polls, start);
        // G5: the tick's duration and the resulting interval and average, for replay.
        BLITZ_PROBE(
            *this, probe_kind::tick_end, polls, elapsed_ns,
            (std::uint64_t{interval_} << 32) |
                std::min<std::uint64_t>(static_cast<std::uint64_t>(avg_poll_ns_), 0xFFFFFFFF));
    } else {
        BLITZ_PROBE(*this, probe_kind::tick_end, 0);
    }
    return polls > 0;
}

void worker::enter_thread() noexcept {
    tl_current_worker = this;
    // The stall detector may signal this thread from here until leave_thread.
    set_thread_stall_probe(&stall_);
    stall_.polling_slot = &tl_task;
    stall_.tid.store(static_cast<int>(::gettid()), std::memory_order_seq_cst);
    sched_.on_worker_start(index_);  // the runtime's context, and the placed PU first (N1)
    sched_.driver().worker_started(index_);
}

void worker::leave_thread() noexcept {
    // Busy mode: the worker's own ring is cancelled and reaped by the worker (its only issuer);
    // what the completions wake lands in the queues the shutdown drains.
    sched_.driver().worker_stopping(index_);
    sched_.on_worker_stop();
    // The watchdog may be reading this thread's task slot or signalling it: it must be done
    // before the thread (and its thread-locals) go, or before the thread moves on to other
    // work (stall_watchdog::ask).
    stall_.tid.store(0, std::memory_order_seq_cst);
    while (stall_.watchdog_busy.load(std::memory_order_seq_cst)) spin_pause();
    set_thread_stall_probe(nullptr);
    tl_current_worker = nullptr;
    // A current-thread driver goes back to being a plain thread: no poll's budget left over.
    tl_coop_budget = -1;
}

void worker::run() {
    std::string name = cfg_.thread_name + std::to_string(index_);
    name.resize(std::min<std::size_t>(name.size(), 15));  // the kernel's limit
    pthread_setname_np(pthread_self(), name.c_str());
    enter_thread();
    while (!sched_.shutting_down()) {
        if (!tick() && (!busy_ || !busy_wait())) park();
    }
    // Leave the idle state consistent for the shutdown pass.
    if (searching_) {
        searching_ = false;
        sched_.idle().transition_from_searching();
    }
    leave_thread();
}

void worker::start_parked() noexcept { (void)sched_.idle().mark_parked(index_, false); }

void worker::drive(const task_header* root) noexcept {
    enter_thread();
    // Out of the park the last drive (or start_parked) left: a producer that claimed this
    // worker meanwhile unparked it, and that token is taken now (take_claim_token), so none is
    // left to cut a later park short.
    if (!sched_.idle().unmark_parked(index_)) {
        take_claim_token();
        searching_ = true;
        bump(c_unparks_notified);
    }
    nudge_dozing_watchdog();
    while (!root->is_complete() && !sched_.shutting_down()) {
        // The root may complete on another thread (task_scope::abort_all of an idle task): its
        // join waker unparks this worker, so a park that began before it returns at once.
        // Paused time with nothing to run: the clock jumps to the next timer instead.
        if (!tick() && !root->is_complete() && !sched_.auto_advance()) park();
    }
    // Parked again until the next drive: what is queued waits for it, as Tokio's current-thread
    // runtime leaves its tasks between two block_on calls. Spawns from other threads claim this
    // worker and leave their token.
    tidy_for_idle();
    if (lifo_) push_ring(std::exchange(lifo_, nullptr));
    (void)sched_.idle().mark_parked(index_, searching_);
    searching_ = false;
    leave_thread();
}

void worker::answer_dump() noexcept {
    dump_request* r = dump_slot_.exchange(nullptr, std::memory_order_acquire);
    if (!r) return;  // the dumper took it back
    const std::uint32_t now_ms = ms_of(clock_.now());
    std::vector<task_record> mine;
    try {
        mine.reserve(owned_.size());
        for (std::size_t i = 0; i < owned_.size(); ++i) {
            task_record rec;
            bool keep = false;
            // A task woken (or aborted) while claimed comes back with its queue entry.
            if (task_header* again = dump_access::record(owned_.at(i), index_, now_ms, rec, keep))
                requeue_given_back(again);
            if (keep) mine.push_back(std::move(rec));
        }
    } catch (...) {
        // Out of memory: the tasks listed so far are the answer (the claim is always released
        // before anything allocates that could throw).
    }
    {
        std::lock_guard<std::mutex> lock(r->m);
        for (auto& rec : mine) r->records.push_back(std::move(rec));
        r->answered[index_] = true;
    }
    r->done.notify_all();
    r->ref_drop();
}

void worker::note_time(std::int64_t now) noexcept {
    // G8: the periodic global check is also due once the target latency has passed since the
    // last one, whatever the poll count says: after poll times jump (1 us to 200 us, say) the
    // EWMA needs a tick or more to catch up, and a tick of slow polls is long.
    last_clock_ = now;
    if (cycle_clock::since(global_checked_at_, now) >=
            static_cast<std::uint64_t>(cfg_.global_target_latency.count()) &&
        !BLITZ_FAULT(cfg_.debug.no_time_bound_on_global_interval)) {
        polls_since_global_ = std::max(polls_since_global_, interval_);
    }
}

std::uint64_t worker::end_tick(unsigned polls, std::int64_t start) noexcept {
    // G5: avg = alpha * sample + (1 - alpha) * avg, sample = mean poll time of this tick;
    // interval = clamp(target / avg, min, max).
    const std::uint64_t elapsed = cycle_clock::since(start, clock_.now());
    const double sample = static_cast<double>(elapsed) / polls;
    avg_poll_ns_ = ewma_step(avg_poll_ns_, sample, cfg_.ewma_alpha);
    interval_ = interval_for(avg_poll_ns_, double(cfg_.global_target_latency.count()),
                             cfg_.global_interval_min, cfg_.global_interval_max);
    set(c_global_interval, interval_);
    set(c_avg_poll_ns, static_cast<std::uint64_t>(avg_poll_ns_));
    return elapsed;
}

std::uint64_t worker::own_sources() const noexcept {
    return (lifo_ && lifo_polls_ < lifo_cap_ ? choice_lifo : 0) |
           (!ring_.empty() ? choice_ring : 0);
}

void worker::note_choice(std::uint64_t extra) noexcept {
    if (probes_on()) choice_ = own_sources() | extra;  // G3: what was available, for the probe
}

inline task_header* worker::fetch_global(bool periodic) noexcept {
    if (sched_.global().empty()) return nullptr;  // G1: no lock for the emptiness check
    return fetch_global_batch(periodic);
}

[[gnu::always_inline]] inline task_header* worker::next_task() noexcept {
    // G4: the periodic check comes first when due.
    if (polls_since_global_ >= interval_ && !BLITZ_FAULT(cfg_.debug.skip_periodic_global_check))
        [[unlikely]] {
        polls_since_global_ = 0;
        global_checked_at_ = last_clock_;  // at most 8 polls old: errs toward checking early
        bump(c_global_periodic);
        BLITZ_PROBE(*this, probe_kind::periodic_check);
        note_choice(choice_periodic);
        task_header* fetched = fetch_global(/*periodic=*/true);
        flush_given_back();  // behind what the periodic check fetched
        if (fetched) return fetched;
    } else {
        flush_given_back();
    }
    note_choice();
#if BLITZ_FAULTS
    if (!hidden_batch_.empty()) {
        task_header* t = hidden_batch_.front();
        hidden_batch_.erase(hidden_batch_.begin());
        from_source(poll_source::global);
        return t;
    }
#endif
    if (BLITZ_FAULT(
            cfg_.debug.ring_before_lifo)) {  // G3's negative control: the ring jumps the LIFO slot
        if (task_header* t = ring_.pop()) {
            bump(c_ring_pops);
            from_source(poll_source::ring);
            return t;
        }
    }
    if (lifo_) {
        if (lifo_polls_ < lifo_cap_) {
            ++lifo_polls_;
            bump(c_lifo_hits);
            source_ = poll_source::lifo;
            return std::exchange(lifo_, nullptr);
        }
        // L2: the cap is reached; the slot's task joins the FIFO order, visible to thieves.
        bump(c_lifo_cap_flushes);
        BLITZ_PROBE(*this, probe_kind::lifo_flush, 0, reinterpret_cast<std::uintptr_t>(lifo_));
        push_ring(std::exchange(lifo_, nullptr));
    }
    // P1: pinned tasks run only here; they take turns with the ring.
    if (!pinned_.empty()) [[unlikely]] {
        if (task_header* t = pick_pinned()) return t;
    }
    note_choice();
    if (task_header* t = ring_.pop()) {
        bump(c_ring_pops);
        from_source(poll_source::ring);
        return t;
    }
    note_choice();
    return fetch_global();
}

task_header* worker::fetch_global_batch(bool periodic) noexcept {
    global_queue& g = sched_.global();
    // G2: one to run plus what fits the ring's free space (nothing overflows); the rest go to
    // the ring's tail, where thieves see them. G7: the periodic check (G4) takes one task, as
    // Tokio's does, while the worker's ring is a quarter full or more: a batch would pull back
    // tasks its own ring overflowed for the next spawns to overflow again. Below a quarter it
    // fills the ring up to a quarter: a worker whose few local tasks keep yielding (busy loops,
    // with remote spawns streaming in) would otherwise take one injected task per yield, 10 us
    // apart when those tasks stall 10 us. Tasks pulled back below a quarter overflow again only
    // after 192 more spawns. G6: it fills only while the ring holds fewer tasks than a quarter
    // of the interval, as the rest of the batch waits behind them. A task left in the global
    // queue waits at most one interval for the next check (one poll, when the ring's tasks
    // yield), so one fetched behind the ring's tasks should not wait more than a fraction of
    // that. With 100 us polls the interval is 10, and a task fetched behind 20 yielding loops
    // waited 20 polls; now a ring of 2 or more takes one task. With 10 us polls (interval 100)
    // a ring below 25 still fills, so injected bursts behind a few yielding loops (busy1)
    // still drain by the batch.
    const std::uint32_t ring_len = ring_.len();
    const std::uint32_t ring_room = local_queue::capacity - ring_len;
    std::uint32_t room = BLITZ_FAULT(cfg_.debug.global_fetch_takes_one) ? 1 : 1 + ring_room;
    if (periodic && !BLITZ_FAULT(cfg_.debug.periodic_fetch_batches)) {
        const std::uint32_t ahead_limit =
            BLITZ_FAULT(cfg_.debug.periodic_fill_past_interval)
                ? periodic_fill
                : std::min<std::uint32_t>(periodic_fill, interval_ / 4);
        const bool fill = ring_len < ahead_limit && !BLITZ_FAULT(cfg_.debug.periodic_fetch_one);
        room = 1 + (fill ? periodic_fill - ring_len : 0);
    }
    task_header* got[1 + local_queue::capacity];
    std::uint64_t len_seen = 0;
    const std::uint32_t n = g.pop_share(got, room, sched_.num_workers(), cfg_.global_batch_min,
                                        cfg_.global_batch_max, &len_seen);
    if (n == 0) return nullptr;
    BLITZ_PROBE(*this, probe_kind::global_fetch, (periodic ? 1u : 0u) | ring_len << 1, n, len_seen);
    from_source(poll_source::global);
    bump(c_global_fetch_ops);
    bump(c_global_fetched, n);
#if BLITZ_FAULTS
    if (cfg_.debug.hide_fetched_batch) {
        hidden_batch_.insert(hidden_batch_.end(), got + 1, got + n);
        return got[0];
    }
#endif
    for (std::uint32_t i = 1; i < n; ++i) push_ring(got[i]);
    if (n > 1) sched_.notify_parked_for_local();  // others may help with the rest
    return got[0];
}

bool worker::begin_search() noexcept {
    const auto adm = sched_.idle().try_become_searcher();
    if (!adm.admitted) return false;
    searching_ = true;
    bump(c_searches);
    BLITZ_PROBE(*this, probe_kind::search_begin, adm.gate_seen, adm.prev + 1);
    return true;
}

task_header* worker::search() noexcept {
    const unsigned w = sched_.num_workers();
    // I10: a worker woken by its own park timeout is owed no work (every task that needs a
    // worker wakes one: I3, I4, I9), so its look is a safety net, not a search: a few random
    // rings and the global queue, without joining the searchers (whose last one to park scans
    // every ring). At 256 workers a full walk at every 10 ms timeout wake kept two CPUs busy.
    const bool sampling = woke_by_timeout_ && !BLITZ_FAULT(cfg_.debug.full_walk_on_timeout);
    if (!sampling && !searching_ && !begin_search()) return nullptr;  // I1: enough searchers
    if (sampling && sched_.idle().num_parked() + 1 >= w &&
        !BLITZ_FAULT(cfg_.debug.full_walk_on_timeout)) {
        // I10: every other worker is parked, and a parked worker's ring is empty (it parks only
        // with nothing queued, and only its owner pushes to its ring): there is no ring to look
        // at. An idle runtime's timeout wake then costs its futex wait and the global check,
        // nothing that grows with W. (A worker unparked after the count was read finds its own
        // work; a timeout wake is owed none.)
        bump(c_timeout_looks_skipped);
        // The walk's random start is drawn all the same, so that a fixed seed replays every
        // worker's victim choices whichever wakes found the others parked (Q7).
        [[maybe_unused]] const unsigned first =
            tiered_ || w < 2 ? index_ : nth_victim(index_, rng_.bounded(w - 1), 0, w);
        BLITZ_PROBE(*this, probe_kind::steal_walk, first, 0, 0);
        note_choice();
        return fetch_global();
    }
    const unsigned limit = sampling ? std::min(w - 1, timeout_victims) : w - 1;
    note_choice();
    if (tiered_) {
        if (task_header* t = steal_tiered(limit)) return t;
    } else if (w > 1) {
        // Q7: a uniform random start among the other workers, then each of them once.
        const unsigned start = BLITZ_FAULT(cfg_.debug.fixed_victim_start) ? 0 : rng_.bounded(w - 1);
        // Probe only: the victims below 64 this walk tried (a 64-bit probe field).
        [[maybe_unused]] std::uint64_t visited = 0;
        for (unsigned i = 0; i < limit; ++i) {
            const unsigned victim = nth_victim(index_, start, i, w);
            if (probes_on() && victim < 64) visited |= std::uint64_t{1} << victim;
            auto r = sched_.worker_at(victim).ring_.steal_into(ring_, cfg_.max_steal,
                                                               BLITZ_FAULT(cfg_.debug.steal_all));
            if (r.first) {
                BLITZ_PROBE(*this, probe_kind::steal_walk, nth_victim(index_, start, 0, w), visited,
                            i + 1);
                return take_stolen(victim, r);
            }
        }
        BLITZ_PROBE(*this, probe_kind::steal_walk, nth_victim(index_, start, 0, w), visited, limit);
    }
    note_choice();
    return fetch_global();  // the final global check before parking (G3)
}

task_header* worker::steal_tiered(unsigned limit) noexcept {
    // N4: every victim on this worker's node (random start), then its package, then the rest;
    // each tier once, each with its own random start.
    [[maybe_unused]] std::uint64_t visited = 0;
    [[maybe_unused]] unsigned first = 0, tried = 0;
    unsigned begin = 0;
    for (const unsigned end : tiers_.end) {
        const unsigned n = end - begin;
        const unsigned start = n > 1 ? rng_.bounded(n) : 0;
        for (unsigned i = 0; i < n; ++i) {
            if (limit == 0) break;  // I10: a timeout wake's few rings, nearest first
            --limit;
            const unsigned victim = tiers_.victims[begin + (start + i) % n];
            BLITZ_PROBE(*this, probe_kind::steal_attempt, victim);
            if (probes_on()) {
                if (tried++ == 0) first = victim;
                if (victim < 64) visited |= std::uint64_t{1} << victim;
            }
            auto r = sched_.worker_at(victim).ring_.steal_into(ring_, cfg_.max_steal,
                                                               BLITZ_FAULT(cfg_.debug.steal_all));
            if (r.first) {
                BLITZ_PROBE(*this, probe_kind::steal_walk, first, visited, tried);
                return take_stolen(victim, r);
            }
        }
        begin = end;
        if (limit == 0) break;
    }
    if (!tiers_.victims.empty()) BLITZ_PROBE(*this, probe_kind::steal_walk, first, visited, tried);
    return nullptr;
}

task_header* worker::take_stolen(unsigned victim, const local_queue::steal_result& r) noexcept {
    bump(c_steal_ops);
    bump(c_stolen_tasks, r.taken);
    if (!distance_to_.empty()) {
        static constexpr counter by_distance[] = {c_steals_same_node, c_steals_same_package,
                                                  c_steals_remote};
        bump(by_distance[distance_to_[victim]]);
    }
    BLITZ_PROBE(*this, probe_kind::steal, victim, r.available, r.taken);
    from_source(poll_source::steal);
    return r.first;
}

[[gnu::always_inline]] inline void worker::run_task(task_header* t, unsigned index,
                                                    unsigned& timed_at) noexcept {
    if (searching_) {
        // I4: a searcher that found work and was the last one wakes another worker, when more
        // work is visible: with nothing else queued the wake only made a worker search and park
        // again, and its futex syscall came before this task's poll (4 us of an 11 us wake
        // latency at 2 workers on the development VM, bench/tools/wake_stages). Work pushed
        // later finds nobody searching, so its producer wakes a worker itself: the producer's
        // push and seq_cst RMW on the searcher count against ours and this look (as in the
        // park's final check) mean either it sees no searcher or we see its work.
        searching_ = false;
        const bool last = sched_.idle().transition_from_searching();
        BLITZ_PROBE(*this, probe_kind::search_end, last ? 1 : 0);
        if (last && !BLITZ_FAULT(cfg_.debug.skip_last_searcher_wake)) {
            const bool more = sched_.work_pending();
            [[maybe_unused]] const bool woke = more && sched_.notify_parked();
            // I8: the wake it owed: 1 claimed, 0 nobody to claim, 2 nothing else queued.
            BLITZ_PROBE(*this, probe_kind::notify, woke ? 1 : more ? 0 : 2);
        }
    }
    bump(c_polls);
    BLITZ_PROBE(*this, probe_kind::poll, static_cast<std::uint32_t>(source_),
                reinterpret_cast<std::uintptr_t>(t), choice_);
    ++polls_since_global_;
    // Latency histograms: a followed wake ends at its task's poll, and the poll at the tick's
    // index `timed_at` is timed (a call of its own), the next one poll_sample_every later.
    // Both compile away with inspection (BLITZ_INSPECT=0).
    if (inspect_enabled && t == followed_) [[unlikely]]
        note_followed_poll(t, clock_.now());
    bool stray = false;
    task_header::poll_outcome outcome;
    if (!inspect_enabled || index != timed_at) [[likely]] {
        outcome = t->poll(poll_budget_, BLITZ_FAULT(cfg_.debug.abort_ignores_shield), stray);
    } else {
        timed_at += poll_sample_every;
        outcome = timed_poll(t, stray);
    }
    if (stray) bump(c_stray_wakes);
    if (outcome == task_header::poll_outcome::rescheduled) {
        // Woken while running (or yielded, or cancellation became due): back of the ring.
        // A task that gives the worker back ranks below work waiting outside (as a yield in
        // Tokio is deferred behind injected tasks): the next pick makes the periodic global
        // check due now, and the task joins the ring behind what that check fetches. G4 asks
        // for a check at least every interval polls; this only adds checks, and they go through
        // the periodic path that G3 expects first when due.
        if (!BLITZ_FAULT(cfg_.debug.skip_periodic_global_check)) {
            polls_since_global_ = interval_;
            given_back_ = t;
        } else {
            requeue_given_back(t);
        }
    }
}

task_header::poll_outcome worker::timed_poll(task_header* t, bool& stray) noexcept {
    const std::int64_t from = clock_.now();
    const auto outcome = t->poll(poll_budget_, BLITZ_FAULT(cfg_.debug.abort_ignores_shield), stray);
    poll_hist_.record(cycle_clock::since(from, clock_.now()));
    return outcome;
}

void worker::note_followed_poll(const task_header* t, std::int64_t now) noexcept {
    followed_ = nullptr;
    // Polled elsewhere since the wake (stolen), or another task in the same block (it starts
    // at 0 polls, and a woken task has been polled): not the wake followed.
    if (dump_access::polls(t) != followed_polls_) return;
    (followed_io_ ? io_hist_ : schedule_hist_).record(cycle_clock::since(followed_at_, now));
}

void worker::flush_collected() noexcept {
    const unsigned n = std::exchange(collected_n_, 0);
    for (unsigned i = 0; i < n; ++i) push_ring(collected_[i]);
    if (n > 1 && !BLITZ_FAULT(cfg_.debug.no_wake_on_local_push)) {
        sched_.notify_parked_for_local();
    }
}

task_header* worker::pick_pinned() noexcept {
    pinned_turn_ = !pinned_turn_;
    if (!pinned_turn_ && !ring_.empty()) return nullptr;  // the ring's turn
    bump(c_pinned_polls);
    from_source(poll_source::pinned);
    return pinned_.pop();
}

void worker::take_pinned_inbox() noexcept {
    std::uint64_t n = 0;
    pinned_.push_chain(pinned_inbox_.take_oldest_first(), [&](task_header* t) {
        ++n;
        return decltype(pinned_inbox_)::next(t);
    });
    if (n) bump(c_pinned_remote, n);
}

void worker::push_pinned_remote(task_header* t) noexcept {
    pinned_inbox_.push(t);
    // pinned_inbox's protocol: after the push (seq_cst), the parked bit (seq_cst). A home that
    // set its bit after this read sees the task in its look at park.
    if ((sched_.idle().bitmap_of(index_) >> (index_ % 64)) & 1) unpark();
}

void worker::requeue_given_back(task_header* t) noexcept {
    // A pinned task (its scheduler is its home's pinned_home) goes back to the pinned FIFO.
    if (t->scheduler() != &sched_ && !BLITZ_FAULT(cfg_.debug.pinned_tasks_migrate)) [[unlikely]] {
        pinned_.push(t);
        return;
    }
    push_ring(t);
    // Alone in this worker's queues it runs here next: waking a parked worker to steal it
    // would only cost a futex wake (a budget yield every 128 awaits would pay one each time).
    if (ring_.len() > 1 || lifo_ != nullptr) sched_.notify_parked_for_local();
}

void worker::flush_given_back() noexcept {
    if (given_back_) requeue_given_back(std::exchange(given_back_, nullptr));
}

void worker::push_ring(task_header* t) noexcept {
    auto r = ring_.push(t, sched_.global(), BLITZ_FAULT(cfg_.debug.overflow_all));
    if (r.overflowed) {
        bump(c_overflows);
        bump(c_overflowed_tasks, r.overflowed);
        BLITZ_PROBE(*this, probe_kind::overflow, 0, r.overflowed);
    }
}

void worker::tidy_for_idle() noexcept {
    reclaim_returned();    // tasks that completed elsewhere leave the list,
    owned_.trim();         // the list's array shrinks after a burst,
    ring_.trim_batches();  // as do overflow batches left from one,
    block_cache_idle();    // and blocks batched for other threads go home, ours come back
}

void worker::park() noexcept {
    idle_state& idle = sched_.idle();
    // I10: a timeout wake samples during its first tick only; a park that does not sleep (the
    // spin saw work, the final check found some) comes back as an ordinary worker.
    woke_by_timeout_ = false;
    tidy_for_idle();
    set_closed(closed_parking, true);  // L4: wakes from this thread now go to the global queue
    if (lifo_) push_ring(std::exchange(lifo_, nullptr));
    if (!ring_.empty() || !sched_.global().empty() || has_hidden_batch() || !pinned_.empty() ||
        !pinned_inbox_.empty()) {
        set_closed(closed_parking, false);
        return;
    }
    // The idle spell starts here: the adaptive spin budget learns how long spells last (a fixed
    // or disabled spin reads no clock).
    const std::int64_t idle_from = spin_.learns() ? clock_.now() : 0;
    if (spin_.budget_ns() > 0 && searching_ && spin_as_last_searcher()) {
        set_closed(closed_parking, false);  // the spin caught the work: the budget stays
        return;
    }
#if BLITZ_FAULTS
    if (cfg_.debug.before_park_commit) cfg_.debug.before_park_commit(index_);
#endif
    const bool was_searching = searching_;
    const bool last_searcher = idle.mark_parked(index_, searching_);
    searching_ = false;
    bump(c_parks);
    if (was_searching) BLITZ_PROBE(*this, probe_kind::search_end, last_searcher ? 1 : 0);
    BLITZ_PROBE(*this, probe_kind::park, last_searcher ? 1 : 0, idle.bitmap_of(index_));
    const bool final_check = last_searcher && !BLITZ_FAULT(cfg_.debug.skip_last_searcher_check);
    // I4 for everyone else: a producer that pushed to the global queue and then read the parked
    // count before this worker's commit, or the bitmap between the commit's two steps, woke
    // nobody; so any worker that parks looks at the global queue once more after committing
    // (seq_cst on both sides: it sees the push, or the producer saw the whole commit). Without
    // it the task waited for a park timeout (the idle model found this: two tasks, two workers).
    const bool missed_push = !last_searcher && !sched_.global().empty();
    // P1: a pinned task pushed for this worker before its bit was set (pinned_inbox's look).
    const bool pinned_waiting = pinned_inbox_.seen_at_park();
    if ((final_check && sched_.work_pending()) || missed_push || pinned_waiting ||
        sched_.shutting_down()) {
        // I4: the final check found work; do not sleep.
        bump(c_park_cancels);
        if (spin_.learns()) end_idle_spell(idle_from, !sched_.shutting_down());
        if (!idle.unmark_parked(index_)) {
            // A producer claimed us meanwhile; we count as its searcher (I6).
            take_claim_token();
            searching_ = true;
            bump(c_unparks_notified);
            BLITZ_PROBE(*this, probe_kind::unpark, 0, idle.bitmap_of(index_));
        } else if (!sched_.shutting_down()) {
            // Back as a searcher (when the gate admits it), so that taking the work found here
            // wakes a parked worker for the rest, as the last searcher to find work does (I4).
            // Without it, two tasks found by the final check went to this worker one after
            // the other while the others slept (the idle model: two tasks, two workers).
            (void)begin_search();
        }
        set_closed(closed_parking, false);
        nudge_dozing_watchdog();
        return;
    }
    // I5: no longer than the park timeout, nor past the next timer expiry (the driver's part).
    // Asleep in the I/O driver, this worker dispatches events; their tasks are collected.
    set_closed(closed_collecting, true);
    const park_wake why = sched_.driver().park(
        index_, parker_, std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.park_timeout));
    set_closed(closed_collecting, false);
    const bool got_token = why == park_wake::token;
    // The spell ended with work if a producer claimed this worker or I/O woke it; a timeout
    // (or shutdown's unpark) counts as a spell longer than any spin.
    bool found_work = false;
    if (idle.unmark_parked(index_)) {
        found_work = why == park_wake::events;
        // I6: our bit was still set, so nobody claimed us. Without a token the park timed out;
        // with one, it was shutdown's unpark (claims never leave stale tokens, see below).
        if (got_token) {
            bump(c_unparks_spurious);
            BLITZ_PROBE(*this, probe_kind::unpark, 2, idle.bitmap_of(index_));
        } else if (why == park_wake::events) {
            bump(c_unparks_io);  // I/O events ended the sleep in the driver (O2)
            BLITZ_PROBE(*this, probe_kind::unpark, 3, idle.bitmap_of(index_));
        } else {
            bump(BLITZ_FAULT(cfg_.debug.miscount_timeout_wakes) ? c_unparks_notified
                                                                : c_unparks_timeout);
            BLITZ_PROBE(*this, probe_kind::unpark, 1, idle.bitmap_of(index_));
            woke_by_timeout_ = true;
        }
    } else {
        // I2/I6: a claimer cleared our bit and counted us as a searcher. If the timeout beat
        // its unpark, take that token now.
        if (!got_token) take_claim_token();
        searching_ = true;
        found_work = true;
        bump(c_unparks_notified);
        BLITZ_PROBE(*this, probe_kind::unpark, 0, idle.bitmap_of(index_));
    }
    if (spin_.learns()) end_idle_spell(idle_from, found_work && !sched_.shutting_down());
    set_closed(closed_parking, false);
    nudge_dozing_watchdog();
    flush_collected();  // what the I/O driver woke, now that this worker is back
}

void worker::nudge_dozing_watchdog() noexcept {
    // Out of its park (its parked bit cleared, by itself or by a claimer), before its next
    // poll: a stall detector dozing over an all-parked runtime must watch again
    // (stall_watchdog::dozing, doze_gate's protocol). Only a park ends a doze: the watchdog
    // dozes only while every worker is parked.
    if constexpr (inspect_enabled) {
        if (stall_watchdog* wd = sched_.watchdog(); wd && wd->dozing()) wd->wake_if_dozing();
    }
}

bool worker::spin_as_last_searcher() noexcept {
    // Only the last searcher spins: producers count on it, since they wake nobody while a
    // searcher exists (I3), so it must keep looking at every ring and the global queue, as its
    // final check would. It parks through the usual protocol when the spin runs out (mark_parked,
    // then I4's final check), so a push that races the end of the spin is seen there. Other
    // searchers and non-searchers park at once: a spinner that producers do not count on saves
    // no wake, and takes a CPU from the workers that have work (results/history/xeon-2c-kvm/
    // parking.md: 0.35x-0.86x on the spawn rows with every idle worker spinning).
    if (sched_.idle().num_searching() != 1) return false;
    bump(c_park_spins);
#if BLITZ_FAULTS
    if (cfg_.debug.on_park_spin) cfg_.debug.on_park_spin(index_);
#endif
    using clock = std::chrono::steady_clock;
    const auto until = clock::now() + std::chrono::nanoseconds(spin_.budget_ns());
    for (;;) {
        // Due timers fire on time, and I/O is looked at, as at a tick's start.
        if (queues_show_work() || driver_look(/*busy=*/false)) {
            bump(c_park_spin_hits);
            return true;
        }
        if (clock::now() >= until) return false;
        // Let another thread placed on this CPU run (the one feeding the runtime, say).
        sched_yield();
    }
}

void worker::end_idle_spell(std::int64_t idle_from, bool found_work) noexcept {
    spin_.spell_ended(clock_.now() - idle_from, found_work);
    set(c_park_spin_budget_ns, static_cast<std::uint64_t>(spin_.budget_ns()));
}

bool worker::queues_show_work() const noexcept {
    for (int i = 0; i < 32; ++i) {
        if (sched_.work_pending() || !pinned_inbox_.empty() || sched_.shutting_down()) return true;
        detail::spin_pause();
    }
    return false;
}

bool worker::driver_look(bool busy) noexcept {
    set_closed(closed_collecting, true);
    const std::size_t fired = busy ? sched_.driver().busy_poll() : sched_.driver().maintain();
    set_closed(closed_collecting, false);
    const bool woke = collected_n_ > 0 || fired > 0;
    flush_collected();
    return woke;
}

bool worker::busy_wait() noexcept {
    // Unlike park_spin's spinner, this worker is neither parked nor searching: no producer wakes
    // it, so it looks for the work itself, and it fires the timers and turns the I/O driver that a
    // parked worker would have slept on.
    tidy_for_idle();
    if (searching_) {
        // A spinning worker is not a searcher (I1: back to 0 at rest). As the last searcher it
        // owes no wake: it keeps watching every queue itself, as the park's final check would.
        searching_ = false;
        [[maybe_unused]] const bool last = sched_.idle().transition_from_searching();
        BLITZ_PROBE(*this, probe_kind::search_end, last ? 1 : 0);
    }
    bump(c_busy_spins);
    const bool forever = cfg_.busy_poll_spin == config::busy_poll_forever;
    const auto until = forever ? clock::time_point::max() : clock::now() + cfg_.busy_poll_spin;
    for (;;) {
        if (queues_show_work()) return true;
        // A task dump waits for this worker: answered at the next tick's start.
        if (dump_slot_.load(std::memory_order_relaxed) != nullptr) [[unlikely]]
            return true;
        bump(c_busy_polls);
        if (BLITZ_FAULT(cfg_.debug.busy_skips_driver)) continue;  // O2's busy-mode control
        if (driver_look(/*busy=*/true)) return true;
        if (!forever && clock::now() >= until && !sched_.driver().busy_must_spin()) {
            bump(c_busy_expiries);
            return false;
        }
        // Give the CPU to any other runnable thread placed here (the thread that feeds the
        // runtime, a blocking-pool thread): without it such a thread waits for the spinner's
        // time slice to end (4 ms at HZ=250). With nobody else runnable the call returns at once.
        sched_yield();
    }
}

void worker::unpark() noexcept { sched_.driver().unpark(index_, parker_); }

void worker::take_claim_token() noexcept {
    // A claimer always unparks the worker it claimed, right after the claim. Waiting for that
    // token here means no token is ever left over to cut a later park short, so every wake is
    // either a claim, a timeout, or shutdown.
    while (!parker_.park(std::chrono::seconds(1))) {
    }
}

void worker::reclaim_returned() noexcept {
    task_header* t = returned_.take_all();
    while (t) {
        task_header* next = decltype(returned_)::next(t);  // before the unref may free t
        [[maybe_unused]] const bool was_listed = owned_.remove(t);
        assert(was_listed && "a task handed back to a worker that does not list it");
        t->unref();  // the list's reference: the block goes back now if it was the last
        t = next;
    }
}

void worker::emit_probe(probe_kind k, std::uint32_t a, std::uint64_t b, std::uint64_t c) noexcept {
    if (((cfg_.probe_kinds >> static_cast<unsigned>(k)) & 1u) == 0) return;  // not asked for
    probes_->emit(probe_event{sched_.uptime_ns(), k, static_cast<std::uint16_t>(index_), a, b, c});
}

std::uint64_t worker::take_probes(std::vector<probe_event>& out) {
    if (!probes_) return 0;
    probes_->take(out);
    return probes_->dropped();
}

worker_metrics worker::snapshot() const {
    static constexpr std::uint64_t worker_metrics::* fields[c_count] = {
        &worker_metrics::ticks,
        &worker_metrics::polls,
        &worker_metrics::lifo_hits,
        &worker_metrics::lifo_cap_flushes,
        &worker_metrics::ring_pops,
        &worker_metrics::steal_ops,
        &worker_metrics::stolen_tasks,
        &worker_metrics::global_fetch_ops,
        &worker_metrics::global_fetched,
        &worker_metrics::global_periodic,
        &worker_metrics::overflows,
        &worker_metrics::overflowed_tasks,
        &worker_metrics::searches,
        &worker_metrics::parks,
        &worker_metrics::unparks_notified,
        &worker_metrics::unparks_timeout,
        &worker_metrics::unparks_spurious,
        &worker_metrics::unparks_io,
        &worker_metrics::timeout_wakes_found_work,
        &worker_metrics::timeout_looks_skipped,
        &worker_metrics::park_cancels,
        &worker_metrics::budget_exhaustions,
        &worker_metrics::spawned_local,
        &worker_metrics::spawned,
        &worker_metrics::stray_wakes,
        &worker_metrics::global_interval,
        &worker_metrics::avg_poll_ns,
        &worker_metrics::steals_same_node,
        &worker_metrics::steals_same_package,
        &worker_metrics::steals_remote,
        &worker_metrics::busy_spins,
        &worker_metrics::busy_polls,
        &worker_metrics::busy_expiries,
        &worker_metrics::park_spins,
        &worker_metrics::park_spin_hits,
        &worker_metrics::park_spin_budget_ns,
        &worker_metrics::pinned_polls,
        &worker_metrics::pinned_remote};
    worker_metrics m;
    for (unsigned i = 0; i < c_count; ++i) {
        m.*fields[i] = counters_[i].load(std::memory_order_relaxed);  // relaxed: a snapshot
    }
    m.poll_ns = poll_hist_.read();
    m.schedule_ns = schedule_hist_.read();
    m.io_ns = io_hist_.read();
    return m;
}

}  // namespace blitz::detail
