// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::metrics: counters the runtime keeps per worker and globally (DESIGN.md section 4).

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace blitz {

// A latency histogram (issue 46): log-bucketed, fixed size. Bucket 0 holds values below 64 ns;
// above that every power of two is cut in 4 buckets (25% wide at most), up to bucket
// `buckets - 1`, which also holds everything from 2^39 ns (about 9 minutes) up.
struct latency_histogram_data {
    static constexpr unsigned sub_bits = 2;
    static constexpr unsigned min_shift = 6;   // 64 ns
    static constexpr unsigned max_shift = 39;  // the last power of two cut into buckets
    static constexpr unsigned buckets = (max_shift - min_shift + 1) * (1u << sub_bits) + 1;
    static constexpr unsigned bucket_of(std::uint64_t ns) noexcept {
        if (ns < (std::uint64_t{1} << min_shift)) return 0;
        const unsigned e = 63u - static_cast<unsigned>(std::countl_zero(ns));
        if (e > max_shift) return buckets - 1;
        const unsigned m = static_cast<unsigned>(ns >> (e - sub_bits)) & ((1u << sub_bits) - 1);
        return 1 + (e - min_shift) * (1u << sub_bits) + m;
    }
    // The smallest value bucket b holds (0 for bucket 0).
    static constexpr std::uint64_t lower_ns(unsigned b) noexcept {
        if (b == 0) return 0;
        const unsigned e = (b - 1) / (1u << sub_bits) + min_shift;
        const std::uint64_t m = (b - 1) % (1u << sub_bits);
        return ((std::uint64_t{1} << sub_bits) + m) << (e - sub_bits);
    }
    // The first value above bucket b (its exclusive upper bound).
    static constexpr std::uint64_t upper_ns(unsigned b) noexcept {
        return b + 1 < buckets ? lower_ns(b + 1) : ~std::uint64_t{0};
    }

    std::vector<std::uint64_t> counts;  // by bucket (empty: nothing recorded)

    std::uint64_t count() const noexcept {
        std::uint64_t n = 0;
        for (auto c : counts) n += c;
        return n;
    }
    // An upper bound of the q-quantile (0 <= q <= 1): the upper end of the bucket that holds
    // it (0 when empty).
    std::uint64_t quantile_ns(double q) const noexcept {
        const std::uint64_t n = count();
        if (n == 0) return 0;
        const double want = q * static_cast<double>(n);
        std::uint64_t seen = 0;
        for (unsigned b = 0; b < counts.size(); ++b) {
            seen += counts[b];
            if (static_cast<double>(seen) >= want && counts[b] != 0) return upper_ns(b);
        }
        return upper_ns(buckets - 1);
    }
    void merge(const latency_histogram_data& o) {
        if (o.counts.empty()) return;
        if (counts.size() < o.counts.size()) counts.resize(o.counts.size(), 0);
        for (std::size_t b = 0; b < o.counts.size(); ++b) counts[b] += o.counts[b];
    }
};

// One worker's counters. Each is written by its worker only (relaxed), so reading them from
// another thread gives a recent, not an atomic, snapshot.
struct worker_metrics {
    std::uint64_t ticks = 0;             // scheduler ticks begun
    std::uint64_t polls = 0;             // task polls (resumes), including cancellations run
    std::uint64_t lifo_hits = 0;         // tasks taken from the LIFO slot
    std::uint64_t lifo_cap_flushes = 0;  // LIFO task moved to the ring because the cap was hit
    std::uint64_t ring_pops = 0;         // tasks popped from the own ring
    std::uint64_t steal_ops = 0;         // successful steals
    std::uint64_t stolen_tasks = 0;      // tasks taken by those steals
    // Successful steals by the victim's distance (with a placement policy; 0 otherwise):
    // same NUMA node, same package on another node, another package.
    std::uint64_t steals_same_node = 0;
    std::uint64_t steals_same_package = 0;
    std::uint64_t steals_remote = 0;
    std::uint64_t global_fetch_ops = 0;  // non-empty fetches from the global queue
    std::uint64_t global_fetched = 0;    // tasks taken by those fetches
    std::uint64_t global_periodic = 0;   // periodic (interval-driven) global checks
    std::uint64_t overflows = 0;         // ring overflows into the global queue
    std::uint64_t overflowed_tasks = 0;  // tasks moved by those overflows
    std::uint64_t searches = 0;          // times this worker became a searcher
    std::uint64_t parks = 0;             // times it went to sleep
    std::uint64_t unparks_notified = 0;  // wakes by a claimer (it was made a searcher)
    std::uint64_t unparks_timeout = 0;   // wakes by the park timeout
    std::uint64_t unparks_spurious = 0;  // token wakes that were no claim (shutdown's unpark)
    std::uint64_t unparks_io = 0;        // wakes by I/O events while asleep in the I/O driver
    std::uint64_t timeout_wakes_found_work = 0;  // timeout wakes followed by finding work
    std::uint64_t timeout_looks_skipped = 0;     // timeout wakes that looked at no ring (I10: every
                                                 // other worker was parked)
    std::uint64_t park_cancels = 0;        // parks abandoned because the final check found work
    std::uint64_t budget_exhaustions = 0;  // ticks that used the whole budget
    std::uint64_t spawned_local = 0;       // tasks spawned or woken into this worker's LIFO
    std::uint64_t spawned = 0;             // tasks spawned by tasks running on this worker
    std::uint64_t stray_wakes = 0;         // polls whose awaitable was not ready (not resumed)
    std::uint64_t global_interval = 0;     // current adaptive global-queue interval (polls)
    std::uint64_t avg_poll_ns = 0;         // current EWMA of the poll time
    // Busy mode (config io_mode busy): times an idle worker began spinning instead of parking,
    // looks it took at the timers and the I/O driver while spinning, and spins that ran out
    // (busy_poll_spin passed without work) and parked.
    std::uint64_t busy_spins = 0;
    std::uint64_t busy_polls = 0;
    std::uint64_t busy_expiries = 0;
    // config::park_spin: times this worker, the last searcher, spun before parking, and spins
    // that found work (or a timer or I/O event) before they ran out; and the spin budget (ns)
    // its next spin will use (config::park_spin_adaptive learns it; 0: it parks at once).
    std::uint64_t park_spins = 0;
    std::uint64_t park_spin_hits = 0;
    std::uint64_t park_spin_budget_ns = 0;
    // Pinned tasks (blitz::spawn_local, runtime::spawn_pinned): polls of this worker's pinned
    // tasks (always here, P1), and their queue entries made on other threads (wakes and spawns
    // that went through this worker's pinned inbox).
    std::uint64_t pinned_polls = 0;
    std::uint64_t pinned_remote = 0;
    // Stalls the stall detector found on this worker (config::stall_threshold).
    std::uint64_t stalls = 0;
    // Latency histograms (issue 46), sampled so that a poll pays almost nothing for them:
    //   poll_ns      how long a poll ran: one poll in 64 is timed
    //   schedule_ns  from a wake to the poll that follows, for tasks woken by this worker's own
    //                thread (a task's wake or a driver's wake run here) and polled here: one
    //                such wake in 16 is followed, one at a time
    //   io_ns        from the moment this worker's I/O driver work reaped a readiness event or
    //                a completion to the poll of the task it woke: one event followed at a time
    latency_histogram_data poll_ns;
    latency_histogram_data schedule_ns;
    latency_histogram_data io_ns;
};

// A snapshot of the whole runtime.
struct runtime_metrics {
    // Blocking pool (X1): threads alive, idle among them, jobs waiting, the most threads alive
    // at once, and threads started so far.
    std::uint64_t blocking_threads = 0;
    std::uint64_t blocking_idle = 0;
    std::uint64_t blocking_queued = 0;
    std::uint64_t blocking_peak_threads = 0;
    std::uint64_t blocking_spawned_threads = 0;
    std::vector<worker_metrics> workers;
    std::uint64_t tasks_spawned = 0;         // spawns accepted (from workers and other threads)
    std::uint64_t tasks_alive = 0;           // task allocations not yet freed (all runtimes)
    std::uint64_t task_bytes_allocated = 0;  // bytes of task allocations ever made (all runtimes)
    std::uint64_t task_allocations = 0;      // task allocations ever made (all runtimes)
    std::uint64_t global_queue_len = 0;
    std::uint64_t global_lock_acquisitions = 0;
    std::uint64_t claims = 0;               // parked workers claimed and woken by producers
    std::uint64_t searcher_overshoots = 0;  // searchers admitted past the cap by the racy check
    unsigned num_searching = 0;
    unsigned num_parked = 0;
    // The parked bitmap, a word per 64 workers: bit i % 64 of word i / 64 is worker i's (I2).
    std::vector<std::uint64_t> parked_bitmap;
    // The stall detector (config::stall_threshold; all 0 when it is off): samples it took of
    // the workers, stalls it found (reported or dropped by the rate limit), those dropped, and
    // the longest stall that has ended (ns, a lower bound: it ended within one sample period
    // after the last sample that saw it).
    std::uint64_t stall_samples = 0;
    std::uint64_t stalls = 0;
    std::uint64_t stalls_suppressed = 0;
    std::uint64_t longest_stall_ns = 0;
    // Of stall_samples, those taken after a doze (every worker parked: one wait of a whole
    // threshold instead of a sample period), and the dozes a worker cut short by running a
    // poll (the first poll after an idle spell wakes the detector).
    std::uint64_t stall_doze_samples = 0;
    std::uint64_t stall_nudges = 0;
    std::uint64_t timers_fired = 0;    // timers whose wakers were called
    std::uint64_t timers_pending = 0;  // timers armed and not yet fired
    std::uint64_t timer_cascades = 0;  // higher-level wheel slots re-inserted lower down
    // Arms and cancels that waited for their timer shard's lock (each worker has a shard of
    // its own; it is taken elsewhere only to fire its due timers or to cancel a sleep whose task
    // moved). Zero on a runtime whose timers are armed and cancelled by their own workers.
    std::uint64_t timer_lock_waits = 0;
    // The I/O driver (issue 16): its backend ("io_uring", "epoll" or "none") and why it was
    // chosen (O1), turns taken, readiness events dispatched, descriptors registered so far and
    // still registered, and its syscalls by kind: waits (epoll_wait or io_uring_enter to wait),
    // submits (epoll_ctl or io_uring_enter to submit), wakes (eventfd writes that interrupt a
    // wait) and the eventfd reads that rearm the waker.
    std::string io_backend;
    std::string io_backend_reason;
    // How idle workers wait ("shared" or "busy", config io_mode) and the driver's rings or
    // instance: how many, shared by whom, and where a submission-polling thread runs.
    std::string io_mode;
    std::string io_rings;
    std::uint64_t io_turns = 0;
    std::uint64_t io_events = 0;
    std::uint64_t io_registrations = 0;
    std::uint64_t io_registered = 0;
    std::uint64_t io_wait_calls = 0;
    std::uint64_t io_submit_calls = 0;
    std::uint64_t io_wake_calls = 0;
    std::uint64_t io_wake_reads = 0;
    // Completion operations (io_uring; read_owned, write_owned): started, in flight, abandoned
    // by their awaiter (then cancelled and settled by the driver), late received bytes kept for
    // the next read, and socket closes deferred until their last operation.
    std::uint64_t io_ops = 0;
    std::uint64_t io_ops_in_flight = 0;
    std::uint64_t io_ops_orphaned = 0;
    std::uint64_t io_orphan_bytes_kept = 0;
    std::uint64_t io_deferred_closes = 0;
    // Completions that named an operation state already reused (ignored by its generation
    // tag): always 0 unless a state was freed too early (O6).
    std::uint64_t io_stale_completions = 0;
    // The per-worker rings (config io_worker_rings): operations submitted to a worker's
    // own ring, cancels another thread handed to a ring's owner, and the rings' io_uring_enter
    // calls (submissions and deferred completion work).
    std::uint64_t io_worker_ring_ops = 0;
    std::uint64_t io_worker_ring_handed_cancels = 0;
    std::uint64_t io_worker_ring_enters = 0;
    // Of those enters, the ones that submitted operations (a tick's staged operations go out
    // with the worker's next look); and the eventfd writes and reads that woke workers parked
    // in their rings (shared mode: the futex wakes they replace).
    std::uint64_t io_worker_ring_submits = 0;
    std::uint64_t io_worker_ring_wakes = 0;
    // Pooled receives (read_pooled, R7): the provided-buffer pool ("ring: N x S B", or why
    // there is none; in busy mode with worker rings N counts every ring's pool), its buffers and
    // those out of it now, multishot receives armed, buffers they filled, their ends for want of a
    // buffer (-ENOBUFS), and pooled reads that found no free buffer and read into a heap buffer.
    std::string io_pool;
    std::uint64_t io_pool_buffers = 0;
    std::uint64_t io_pool_out = 0;
    std::uint64_t io_pool_arms = 0;
    std::uint64_t io_pool_chunks = 0;
    std::uint64_t io_pool_enobufs = 0;
    std::uint64_t io_pool_fallbacks = 0;
    // write_owned sends made by SEND_ZC (config io_send_zc_threshold).
    std::uint64_t io_send_zc = 0;
    // Owned reads and writes submitted with a linked timeout (they were started under a
    // timeout(), config io_linked_timeouts).
    std::uint64_t io_linked_timeouts = 0;
    // config socket_busy_poll: TCP and UDP sockets given SO_BUSY_POLL, those the kernel refused,
    // and the first refusal ("SO_BUSY_POLL: Operation not permitted (EPERM)"; empty if none).
    // (config napi_busy_poll is shown in io_rings.)
    std::uint64_t socket_busy_poll_set = 0;
    std::uint64_t socket_busy_poll_failed = 0;
    std::string socket_busy_poll_error;

    // Sum of one field over all workers, e.g. total(&worker_metrics::polls).
    std::uint64_t total(std::uint64_t worker_metrics::* field) const {
        std::uint64_t s = 0;
        for (const auto& w : workers) s += w.*field;
        return s;
    }
    // Bits set in parked_bitmap (equal to num_parked at quiescence, I2).
    unsigned parked_bits() const {
        unsigned n = 0;
        for (const std::uint64_t w : parked_bitmap) n += static_cast<unsigned>(std::popcount(w));
        return n;
    }
    // One histogram over all workers, e.g. merged(&worker_metrics::poll_ns).
    latency_histogram_data merged(latency_histogram_data worker_metrics::* field) const {
        latency_histogram_data h;
        for (const auto& w : workers) h.merge(w.*field);
        return h;
    }
    // The snapshot in the OpenMetrics text format (Prometheus's exposition format), ready for
    // a scraper: counters as `blitz_*_total`, gauges, and the three latency histograms with
    // cumulative `_bucket{le="..."}` lines in seconds, per worker (label `worker`).
    std::string to_openmetrics() const;
    // The figures `blitz top` shows, as one JSON object: per worker its counters and the
    // p50/p90/p99/max of its three histograms (bucket upper bounds), then the runtime's (the
    // inspect socket's "metrics" answer; shape in docs/guide/debugging.md).
    std::string to_json() const;

    // Tasks moved across the ring/global boundary: overflowed out of a ring plus fetched from
    // the global queue (an injected task counts once, when fetched). Per task, it shows how
    // often queued work is shuffled instead of run (issue 15's overflow churn).
    std::uint64_t ring_global_crossings() const {
        return total(&worker_metrics::overflowed_tasks) + total(&worker_metrics::global_fetched);
    }
};

}  // namespace blitz
