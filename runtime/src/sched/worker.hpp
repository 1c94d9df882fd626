// SPDX-License-Identifier: MIT
#pragma once
// worker: one scheduler thread with its LIFO slot, ring, parker and counters.

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/atomic.hpp"
#include "base/cycle_clock.hpp"
#include "base/latency_histogram.hpp"
#include "base/rng.hpp"
#include "blitz/config.hpp"
#include "blitz/metrics.hpp"
#include "blitz/probe.hpp"
#include "probe/probe_ring.hpp"
#include "sched/completion_inbox.hpp"
#include "sched/local_queue.hpp"
#include "sched/parker.hpp"
#include "sched/pinned_queue.hpp"
#include "sched/spin_budget.hpp"
#include "sched/stall_watchdog.hpp"
#include "sched/task_dump.hpp"
#include "sched/task_list.hpp"
#include "sched/victim_tiers.hpp"

// Records a probe event on worker `w` when probes are on; the arguments are not evaluated
// otherwise. With BLITZ_PROBES=0 the site compiles to nothing.
#if BLITZ_PROBES
#define BLITZ_PROBE(w, ...)               \
    do {                                  \
        if ((w).probes_on()) [[unlikely]] \
            (w).emit_probe(__VA_ARGS__);  \
    } while (0)
#else
#define BLITZ_PROBE(w, ...) \
    do {                    \
    } while (0)
#endif

namespace blitz::detail {

class scheduler;
class worker;

// The worker this thread is, or nullptr on any other thread. Inline: every spawn and every
// completion asks (a call into another file was about 1 ns of a 40 ns chained spawn).
inline thread_local worker* tl_current_worker = nullptr;
inline worker* current_worker() noexcept { return tl_current_worker; }

// A worker runs ticks of at most budget_per_tick polls (B1) and finds work in this order (G3):
//   0. the global queue first (one task, G7) when `interval` polls (G4) or 1 ms (G8) have
//      passed since its last check
//   1. the LIFO slot, at most lifo_polls_per_tick times in a row (the count starts again at
//      each tick and at each task from elsewhere); past the cap its task moves to the ring
//      tail (L2)
//   2. the ring (FIFO, Q3)
//   3. the global queue (batch fetch into the ring, G2)
//   4. stealing, as a searcher if the searcher cap allows (I1, Q5, Q7)
//   5. the global queue once more
//   6. park: flush the LIFO slot, re-check local work, set the parked bit, final check of all
//      queues if it was the last searcher (I4), sleep on the futex (I5).
//
// Invariants: the LIFO slot and all plain fields are touched only by this worker's
// thread (or by the shutdown thread after the worker has been joined). No task is pushed into
// the LIFO slot while transitioning_to_park() holds (L4).
// Thread-safety: owner thread only, except ring() (thieves call steal_into), unpark() and
// snapshot() (any thread).
class alignas(cache_line) worker {
public:
    worker(scheduler& s, unsigned index, std::uint64_t seed, std::uint16_t list_id);
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    void run();  // the thread body; returns at shutdown
    // The current-thread runtime (config::flavor): runs this worker on the calling thread until
    // `root` completes or shutdown begins, then leaves it parked (its bit set), as it was
    // before. One thread at a time (the scheduler's core), never a thread of another runtime.
    void drive(const task_header* root) noexcept;
    // The current-thread runtime before its first drive: the worker counts as parked, so that
    // spawns from other threads claim and unpark it (their token waits for the next drive).
    void start_parked() noexcept;

    // Places a task (with its queue entry) on this worker: LIFO slot, or the ring tail for a
    // yield or when the LIFO is disabled (L1). Owner thread only. Inline in scheduler.cpp, its
    // only caller's file (scheduler::schedule_from), so a spawn is one function.
    inline void schedule_local(task_header* t, bool is_yield) noexcept;
    bool accepts_local() const noexcept {
        return collecting() || !transitioning_to_park() ||
               BLITZ_FAULT(cfg_.debug.lifo_while_parking);
    }
    // The LIFO slot's occupant. Owner thread only (tests check L1 with it).
    const task_header* lifo_peek() const noexcept { return lifo_; }

    // Counts a task spawned on this worker (owner thread only).
    void count_spawn() noexcept { bump(c_spawned); }
    // A spawn's common case, compiled into submit_spawn (owner thread only): the LIFO slot is on
    // and free, and the worker is neither collecting a driver's wakes nor on its way to park, so
    // the task takes the slot and nothing is displaced or woken. False, with nothing done, in
    // every other case (schedule_local then decides).
    bool spawn_into_free_slot(task_header* t) noexcept {
        if (lifo_ != nullptr || slot_closed_ != 0) return false;
        bump(c_spawned);
        bump(c_spawned_local);
        lifo_ = t;  // L1
        return true;
    }
    // Records a task whose poll on this worker left it suspended in its owned list, with the
    // reference spawn reserved (owner thread only), and when (the dump's age: the tick's time).
    void own(task_header* t) noexcept {
        dump_access::set_listed(t, tick_ms_);
        owned_.push(t);
    }
    // Takes a task that completed on this thread out of the owned list if it is there; true if
    // it was (the caller drops the list's reference). Owner thread only.
    bool disown(task_header* t) noexcept { return owned_.remove(t); }
    // A task of this worker's list that completed on another thread (any thread).
    void hand_back(task_header* t) noexcept { returned_.push(t); }

    // Pinned tasks (blitz::spawn_local, runtime::spawn_pinned; INVARIANTS P1): a queue entry of
    // a task whose home is this worker. From this worker's thread it joins the pinned FIFO;
    // from any other thread it goes to the pinned inbox, and a parked home is unparked
    // (pinned_inbox's protocol). Neither queue is stolen from or spilled to the global queue.
    void push_pinned_here(task_header* t) noexcept { pinned_.push(t); }
    void push_pinned_remote(task_header* t) noexcept;
    // Takes the handed-back tasks out of the owned list and drops the list's references (owner
    // thread, or the shutdown thread once the workers stopped).
    void reclaim_returned() noexcept;

    // Probe recording (owner thread only); call sites use BLITZ_PROBE so that arguments are
    // evaluated only when probes are on.
    bool probes_on() const noexcept { return probes_ != nullptr; }
    void emit_probe(probe_kind k, std::uint32_t a = 0, std::uint64_t b = 0,
                    std::uint64_t c = 0) noexcept;
    // Moves the recorded events to `out`; returns the count dropped so far.
    std::uint64_t take_probes(std::vector<probe_event>& out);

    // Before the thread starts: NUMA-aware stealing (N4) walks these tiers instead of one random
    // ring over all workers; distances classify successful steals for the counters.
    void set_victim_tiers(victim_tiers t) {
        tiers_ = std::move(t);
        tiered_ = true;
    }
    void set_distances(std::vector<std::uint8_t> d) { distance_to_ = std::move(d); }

    scheduler& sched() noexcept { return sched_; }
    bool owned_by(const scheduler* s) const noexcept { return &sched_ == s; }
    unsigned index() const noexcept { return index_; }
    local_queue& ring() noexcept { return ring_; }
    void unpark() noexcept;
    worker_metrics snapshot() const;
    // A wake made on this worker's thread (owner thread only): one in wake_sample_every, and
    // each I/O wake while the slot is free, is followed to its poll for the schedule_ns and
    // io_ns histograms (one at a time). Inline in scheduler.cpp, its only caller's file.
    inline void sample_wake(const task_header* t) noexcept;
    // Any thread: one counter's recent value (the stall detector's samples).
    std::uint64_t counter_value(unsigned c) const noexcept {
        return counters_[c].load(std::memory_order_relaxed);
    }
    // What this worker's signal handler answers the stall detector with (stall_probe).
    stall_probe& stall_probe_slot() noexcept { return stall_; }

    // The task dump (dump_request's protocol): the dumper asks (any thread; the worker answers
    // at the start of its next tick, woken if parked), takes an unanswered request back (any
    // thread; nullptr when the worker already took it), and the worker answers (owner thread:
    // at a tick's start, or inside a poll when the dump was asked for from one of its tasks).
    void ask_dump(dump_request* r) noexcept {
        dump_slot_.store(r, std::memory_order_release);
        unpark();
    }
    dump_request* take_back_dump() noexcept {
        return dump_slot_.exchange(nullptr, std::memory_order_acq_rel);
    }
    void answer_dump() noexcept;

    // Shutdown only, after the thread was joined: hands every queued task to `f`.
    template <class F>
    void drain(F&& f) {
        if (lifo_) f(std::exchange(lifo_, nullptr));
        if (given_back_) f(std::exchange(given_back_, nullptr));
#if BLITZ_FAULTS
        for (task_header* t : hidden_batch_) f(t);
        hidden_batch_.clear();
#endif
        while (task_header* t = ring_.pop()) f(t);
        while (task_header* t = pinned_.pop()) f(t);
        take_pinned_inbox();
        while (task_header* t = pinned_.pop()) f(t);
    }
    // Shutdown only: takes one task from the owned list (its list reference passes along).
    task_header* pop_owned() noexcept { return owned_.pop(); }

    enum counter : unsigned {
        c_ticks,
        c_polls,
        c_lifo_hits,
        c_lifo_cap_flushes,
        c_ring_pops,
        c_steal_ops,
        c_stolen_tasks,
        c_global_fetch_ops,
        c_global_fetched,
        c_global_periodic,
        c_overflows,
        c_overflowed_tasks,
        c_searches,
        c_parks,
        c_unparks_notified,
        c_unparks_timeout,
        c_unparks_spurious,
        c_unparks_io,
        c_timeout_wakes_found_work,
        c_timeout_looks_skipped,
        c_park_cancels,
        c_budget_exhaustions,
        c_spawned_local,
        c_spawned,
        c_stray_wakes,
        c_global_interval,
        c_avg_poll_ns,
        c_steals_same_node,
        c_steals_same_package,
        c_steals_remote,
        c_busy_spins,
        c_busy_polls,
        c_busy_expiries,
        c_park_spins,
        c_park_spin_hits,
        c_park_spin_budget_ns,
        c_pinned_polls,
        c_pinned_remote,
        c_count
    };

private:
    // Moves the pinned inbox, oldest first, to the pinned FIFO (owner thread; the shutdown
    // thread once the workers stopped).
    void take_pinned_inbox() noexcept;
    // The pinned FIFO's next task when it is its turn against the ring (next_task), or nullptr.
    task_header* pick_pinned() noexcept;
    // next_task and run_task are inline in worker.cpp: compiled into the run loop.
    inline task_header* next_task() noexcept;
    // The global queue's emptiness check (G1: no lock), inline in worker.cpp: a yield's periodic
    // check mostly finds the queue empty. fetch_global_batch takes the batch.
    inline task_header* fetch_global(bool periodic = false) noexcept;
    task_header* fetch_global_batch(bool periodic) noexcept;
    task_header* search() noexcept;
    // I1: becomes a searcher if the gate admits it; false when enough workers search already.
    bool begin_search() noexcept;
    task_header* steal_tiered(unsigned limit) noexcept;
    task_header* take_stolen(unsigned victim, const local_queue::steal_result& r) noexcept;
    inline void run_task(task_header* t, unsigned index, unsigned& timed_at) noexcept;
    void push_ring(task_header* t) noexcept;
    // What a worker does as it goes idle (it parks, or busy mode's wait): hands back, trims and
    // returns what a burst left behind.
    void tidy_for_idle() noexcept;
    void park() noexcept;
    void take_claim_token() noexcept;
    // One tick (B1): maintenance, then up to budget_per_tick polls. False when it found nothing
    // to poll (the caller parks, or spins in busy mode).
    inline bool tick() noexcept;
    // What a thread does first and last as this worker (run, drive): the thread's context, the
    // stall detector's view of it, the driver's per-worker state.
    void enter_thread() noexcept;
    void leave_thread() noexcept;
    // Puts a task that gave this worker back (a yield, a wake while running) at the ring's
    // tail, waking a parked worker only if there is more here than that task.
    void requeue_given_back(task_header* t) noexcept;
    void flush_given_back() noexcept;
    // Tasks woken by this worker's driver work (timers fired and I/O dispatched at the start of
    // a tick, or while it slept in the I/O driver) are collected and then pushed to the ring
    // tail as one batch; one parked peer is woken only if the batch holds more than one task
    // (IO.md 7.2 seam 2): a driver turn does not cost a futex wake per event.
    void flush_collected() noexcept;
    // config::park_spin: the last searcher keeps searching before it parks, for the budget
    // spin_ holds; true if work (or shutdown) showed up before the spin ran out (the caller is
    // then still a searcher).
    bool spin_as_last_searcher() noexcept;
    // An idle spell that began at `idle_from` (a clock_ reading) ended, with work or without:
    // the adaptive spin budget learns from it.
    void end_idle_spell(std::int64_t idle_from, bool found_work) noexcept;
    // The spinners' two looks (park_spin, busy mode): every queue 32 times, true if work or
    // shutdown showed; then the timers and the I/O driver (busy_poll in busy mode, maintain
    // otherwise), true if they woke a task, which is then in this worker's ring.
    bool queues_show_work() const noexcept;
    bool driver_look(bool busy) noexcept;
    // Busy mode (config io_mode busy): spins over the queues, the timers and the I/O driver
    // instead of parking; true once work (or shutdown) shows up, false when busy_poll_spin ran
    // out (the caller then parks).
    bool busy_wait() noexcept;
    // G8: records a clock reading (tick start, every 8 polls) and makes the periodic global
    // check due if the target latency has passed since the last one.
    void note_time(std::int64_t now) noexcept;
    // Returns the tick's duration in ns.
    std::uint64_t end_tick(unsigned polls, std::int64_t start) noexcept;
    // G3 probe support: which of the worker's own sources held work when it chose the next task.
    std::uint64_t own_sources() const noexcept;
    void note_choice(std::uint64_t extra = 0) noexcept;
    bool has_hidden_batch() const noexcept {
#if BLITZ_FAULTS
        return !hidden_batch_.empty();
#else
        return false;
#endif
    }

    // Single-writer counter bump: relaxed load + store (no RMW), readers get a recent value.
    void bump(counter c, std::uint64_t n = 1) noexcept {
        counters_[c].store(counters_[c].load(std::memory_order_relaxed) + n,
                           std::memory_order_relaxed);
    }
    void set(counter c, std::uint64_t v) noexcept {
        counters_[c].store(v, std::memory_order_relaxed);
    }

    scheduler& sched_;
    const config& cfg_;
    const unsigned index_;
    const bool busy_;          // config io_mode busy: spin instead of parking (busy_wait)
    const cycle_clock clock_;  // G5's tick durations and G8's time bound
    // The configuration the run loop reads at every poll, kept here so that a poll reads it
    // without going through cfg_: budget_per_tick, lifo_polls_per_tick, and the cooperative
    // budget a poll starts with (coop_budget_per_poll, -1 for none when that is 0).
    const unsigned budget_per_tick_;
    const unsigned lifo_cap_;
    const int poll_budget_;

    // ---- owner-thread state ----
    task_header* lifo_ = nullptr;
    // This worker's pinned tasks with a queue entry, oldest first (P1: polled here only). They
    // take turns with the ring (pinned_turn_), so neither starves the other.
    pinned_fifo<task_header, task_list::inbox_link> pinned_;
    bool pinned_turn_ = false;
    // A task that gave the worker back (yielded, woken while it ran): it joins the ring after
    // the periodic global check its poll made due, behind what that check fetched, as Tokio
    // defers a yielded task behind injected work. Empty outside the gap between that poll and
    // the next pick.
    task_header* given_back_ = nullptr;
    // Why a spawn on this thread cannot simply take a free LIFO slot, a bit each: the worker is
    // on its way to park (L4: wakes from this thread go to the global queue), it is collecting
    // a driver's wakes (they go to collected_), or the slot is off (lifo_polls_per_tick 0, set
    // once). One byte, so that the spawn's common case tests all three at once.
    static constexpr std::uint8_t closed_parking = 1, closed_collecting = 2, closed_no_lifo = 4;
    std::uint8_t slot_closed_ = 0;
    bool transitioning_to_park() const noexcept { return slot_closed_ & closed_parking; }
    bool collecting() const noexcept { return slot_closed_ & closed_collecting; }
    void set_closed(std::uint8_t why, bool on) noexcept {
        slot_closed_ = on ? slot_closed_ | why : slot_closed_ & ~why;
    }
    static constexpr unsigned collect_capacity = 64;
    // G7: below this many ring tasks the periodic global check fills the ring up to it.
    static constexpr std::uint32_t periodic_fill = 64;  // a quarter of local_queue::capacity
    // I10: the rings a worker woken by its park timeout looks at before the global queue.
    static constexpr unsigned timeout_victims = 4;
    unsigned collected_n_ = 0;
    task_header* collected_[collect_capacity];
    bool searching_ = false;
    bool woke_by_timeout_ = false;
    spin_budget spin_;         // config::park_spin: how long the last searcher spins before parking
    unsigned lifo_polls_ = 0;  // LIFO polls in a row (L2)
    unsigned polls_since_global_ = 0;  // polls since the last global-queue check (G4)
    unsigned interval_;                // adaptive global-queue interval (G5)
    double avg_poll_ns_;               // EWMA of the mean poll time per tick
    // cycle_clock readings (ns): the latest (G8), and the one before the last periodic check
    // (long ago at first, so the first tick's check is due by time).
    std::int64_t last_clock_ = 0;
    std::int64_t global_checked_at_ = std::numeric_limits<std::int64_t>::min() / 2;
    fast_rng rng_;
    poll_source source_ = poll_source::ring;  // where the task about to run came from
    // The task about to run came from `s`, not the LIFO slot. L2: the LIFO cap counts polls in a
    // row, so a task from anywhere else starts the count again (as Tokio counts its LIFO polls
    // after each task it takes from its queues); a message exchange between a task and the one
    // it woke stays in the slot, while a task queued in the ring still runs after at most the
    // cap's polls of such an exchange (L3). Set where the task is taken, so that the LIFO path,
    // the common one, pays nothing for it at the poll.
    void from_source(poll_source s) noexcept {
        source_ = s;
        lifo_polls_ = 0;
    }
    std::uint64_t choice_ = 0;  // own_sources() at the last choice (probes only; see probe.hpp)
    // Latency histograms (issue 46; worker_metrics::poll_ns, schedule_ns, io_ns): one poll in
    // poll_sample_every is timed (poll_countdown_: polls until the next, counted per tick); one
    // wake is followed at a time (the task, its poll count then, so that a block reused by
    // another task at the same address is not taken for it, when it was woken and whether by
    // the I/O driver), dropped if unpolled here a second later (stolen).
    static constexpr unsigned poll_sample_every = 64, wake_sample_every = 16;
    unsigned poll_countdown_ = poll_sample_every;
    unsigned wake_countdown_ = wake_sample_every;
    const task_header* followed_ = nullptr;
    std::uint32_t followed_polls_ = 0;
    std::int64_t followed_at_ = 0;
    bool followed_io_ = false;
    void note_followed_poll(const task_header* t, std::int64_t now) noexcept;
    void nudge_dozing_watchdog() noexcept;
    // clang: the callee keeps the registers (preserve_most), so that schedule(), whose path
    // this call sits on, saves none for it.
#if defined(__clang__) && defined(__x86_64__)
    [[gnu::noinline, gnu::cold, clang::preserve_most]]
#else
    [[gnu::noinline, gnu::cold]]
#endif
    void follow_wake(const task_header* t, bool io) noexcept;
    [[gnu::noinline, gnu::cold]] task_header::poll_outcome timed_poll(task_header* t,
                                                                      bool& stray) noexcept;
    std::unique_ptr<probe_ring> probes_;  // null when config::probes is off
    task_list owned_;      // tasks a poll here first left suspended, until they complete
    bool tiered_ = false;  // NUMA-aware stealing
    victim_tiers tiers_;   // when tiered_
    std::vector<std::uint8_t> distance_to_;  // distance class per worker; empty: not placed
#if BLITZ_FAULTS
    // G2's control (hide_fetched_batch): fetched tasks kept where thieves cannot see them, as
    // the batch buffer before issue 15 did. Taken first by next_task, drained at shutdown.
    std::vector<task_header*> hidden_batch_;
#endif

    // ---- read by other threads ----
    alignas(cache_line) atomic<std::uint64_t> counters_[c_count];
    local_queue ring_;  // head, tail and slots each sit on their own 128-byte lines
    // Tasks of owned_ that completed on other threads (on its own 128-byte line).
    completion_inbox<task_header, task_list::inbox_link> returned_;
    // Queue entries of this worker's pinned tasks made on other threads (its own line).
    pinned_inbox<task_header, task_list::inbox_link> pinned_inbox_;
    parker parker_;
    alignas(cache_line) stall_probe stall_;  // the watchdog's and this thread's handler's
    latency_histogram poll_hist_, schedule_hist_, io_hist_;  // written here, read by snapshot()
    atomic<dump_request*> dump_slot_{nullptr};  // a dump waiting for this worker's answer
    // The current tick's start on clock_, in ms_of's units (own(): the dump's age).
    std::uint32_t tick_ms_ = 0;
    // A reading of clock_ in whole milliseconds, wrapping at 2^32 (task_header::listed_ms_).
    static std::uint32_t ms_of(std::int64_t ns) noexcept {
        return static_cast<std::uint32_t>(static_cast<std::uint64_t>(ns) / 1'000'000);
    }
};

}  // namespace blitz::detail
