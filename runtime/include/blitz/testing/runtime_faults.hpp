// SPDX-License-Identifier: MIT
#pragma once
// The runtime's negative controls, set through config::debug in the faults build: each switch
// breaks one invariant of docs/INVARIANTS.md on purpose, so its checker is seen to fail.

#include <chrono>
#include <cstdint>
#include <functional>

#include "blitz/detail/faults.hpp"

#if !BLITZ_FAULTS
#error "blitz/testing/runtime_faults.hpp belongs to the faults build: link blitz::runtime_faults"
#endif

namespace blitz::testing {

struct runtime_faults {
    // I4: a last searcher parks without its final check of every queue.
    bool skip_last_searcher_check = false;
    // Q5: a thief takes everything (up to max_steal) instead of half.
    bool steal_all = false;
    // G4: a worker with local work never checks the global queue periodically.
    bool skip_periodic_global_check = false;
    // Q4: a full ring moves all its tasks to the global queue instead of half.
    bool overflow_all = false;
    // T4: timers fire one tick (1 ms) before their deadline.
    bool timers_fire_early = false;
    // T6: timers fire once half of their wait has passed (beats a real clock's wake lateness).
    bool timers_fire_half_early = false;
    // K3: shutdown forgets the tasks still in the global queue (they leak).
    bool shutdown_skips_global_queue = false;
    // Q7: every victim walk starts at the same worker instead of a random one.
    bool fixed_victim_start = false;
    // G3: the owner pops its ring before looking at the LIFO slot.
    bool ring_before_lifo = false;
    // G1: the global queue's emptiness check takes the lock.
    bool locked_global_empty = false;
    // G1 (amended by issue 21): a push into the global queue takes the consumers' lock.
    bool locked_global_push = false;
    // I2: a waker claims the highest parked worker instead of the lowest.
    bool claim_highest_parked = false;
    // I3: producers wake a parked worker even while a searcher exists.
    bool wake_despite_searchers = false;
    // I6: a worker woken by its park timeout is counted as woken by a claimer.
    bool miscount_timeout_wakes = false;
    // I7: more workers than the bitmap holds are silently capped instead of rejected.
    bool clamp_workers_silently = false;
    // L4: wakes from a worker that is on its way to park still go to its LIFO slot.
    bool lifo_while_parking = false;
    // K4: an abort takes effect at the next poll even under a cancel_shield.
    bool abort_ignores_shield = false;
    // K5: an exception escaping a task is dropped instead of reaching its join handle.
    bool drop_exceptions = false;
    // N1: each worker binds to the PU after the one it was given (the map stays correct).
    bool bind_wrong_pu = false;
    // N2: scatter spreads over cores in PU order, ignoring NUMA nodes.
    bool scatter_ignores_nodes = false;
    // N3: every worker's state is requested on the first NUMA node.
    bool memory_on_node0 = false;
    // N4: NUMA-aware stealing walks all victims in one random order, ignoring nodes.
    bool steal_ignores_nodes = false;
    // X1: the blocking pool starts a thread for every job, ignoring its cap.
    bool blocking_ignores_cap = false;
    // X1: the pool starts a thread only when none is idle, so one idle thread stands for every
    // queued job and the jobs of a burst wait for each other.
    bool blocking_one_idle_for_all = false;
    // Not a defect: X1's burst makes a woken idle pool thread wait this long (still counted
    // idle) before it takes a job, so that the burst is queued first on any machine. Without
    // it, a loaded machine's scheduler often ran the woken thread before the next submit, and
    // the control's stall (which needs the burst queued first) did not happen.
    std::chrono::nanoseconds blocking_wake_delay{0};
    // X7: a select also completes every other branch that is ready when it returns and
    // discards their results (what spawning each branch as a task used to do).
    bool select_completes_losers = false;
    // X7: a select resumes its winner as soon as it is decided, while the losing branches' drop
    // hooks (a task_scope's tasks being aborted) have not settled.
    bool select_skips_loser_settle = false;
    // X8: a join_set task's completion hands its outcome straight to the waiting join_next,
    // which drops it when it never resumes (a select it lost, an abort).
    bool join_set_hands_to_waiter = false;
    // G7: the periodic global check fetches a batch, as an ordinary fetch does.
    bool periodic_fetch_batches = false;
    // G7 before issue 21: the periodic global check takes one task even when the ring is
    // nearly empty (injected tasks then drain one per yield behind a yielding loop).
    bool periodic_fetch_one = false;
    // G6: the periodic check fills any ring that holds fewer than 64 tasks, so the rest of its
    // batch may wait behind more than one interval of local polls (d1b0fd4's behaviour).
    bool periodic_fill_past_interval = false;
    // K3: a task that a poll left suspended is never listed (lazy listing without its list):
    // shutdown cannot find an idle task, which keeps its frame and its block.
    bool suspended_tasks_unlisted = false;
    // G2: fetched tasks wait where thieves cannot see them (the batch buffer before issue 15).
    bool hide_fetched_batch = false;
    // G2: a fetch from the global queue (other than the periodic check) takes one task.
    bool global_fetch_takes_one = false;
    // G8: the periodic global check follows the poll count only, never the clock.
    bool no_time_bound_on_global_interval = false;
    // I8: the last searcher to find work does not wake another worker.
    bool skip_last_searcher_wake = false;
    // L3: the LIFO count starts again at every tick (as before issue 45), so a cap reached on a
    // tick's last poll lets the pair run the cap's polls again.
    bool lifo_count_per_tick = false;
    // P1: a pinned task's queue entries go where any task's would (LIFO slot, ring, global
    // queue), so it can be stolen or fetched by another worker.
    bool pinned_tasks_migrate = false;
    // I10: a worker woken by its park timeout becomes a searcher and walks every ring.
    bool full_walk_on_timeout = false;
    // I9: a worker that pushes work to its ring never wakes a parked peer to help.
    bool no_wake_on_local_push = false;
    // T7: arming a timer earlier than every parked worker's wake-up wakes nobody.
    bool timer_arm_skips_wake = false;
    // T8: a worker fires due timers only at ticks that start with its own queues empty.
    bool timers_only_when_idle = false;
    // O1: automatic backend selection falls back to epoll only when io_uring setup fails with
    // ENOSYS (the Eio bug): any other errno becomes a construction error.
    bool io_fallback_on_enosys_only = false;
    // O2: waking a worker that sleeps in the I/O driver does not interrupt the driver's wait
    // (no eventfd write), so the wake waits for I/O or the park timeout.
    bool io_skip_driver_wake = false;
    // O2 in busy mode: a spinning worker never looks at the timers or the I/O driver, so I/O
    // that completes while every worker spins is never dispatched.
    bool busy_skips_driver = false;
    // O4: the worker that leaves the I/O driver with work in hand does not hand the driver on,
    // and running workers do not poll for I/O at the start of their ticks.
    bool io_no_handoff = false;
    // O5: a read awaiter destroyed while it waits makes one more read and drops the bytes, and
    // an abandoned completion-mode receive's late bytes are dropped instead of kept for the
    // next read.
    bool io_drop_orphan_data = false;
    // O7: a descriptor closed while a completion operation uses it is closed at once, and again
    // when the operation settles (a double close that hits whoever reused the number).
    bool io_close_immediately = false;
    // O6: an abandoned completion operation's state and buffer are freed at once instead of at
    // its final completion (the kernel may still write the buffer; the completion names a
    // reused state).
    bool io_free_op_on_cancel = false;
    // O15: every completion operation is submitted to io_uring on its own (one io_uring_enter
    // each) instead of staged and submitted once per tick.
    bool io_submit_per_op = false;
    // O3: a completion operation's completion wakes its task but never releases the waker's
    // task reference (the task's block stays allocated).
    bool io_leak_completion_ref = false;
    // O11: a multishot pooled receive that ran out of buffers (-ENOBUFS) ends the stream (the
    // next pooled read reports end of stream) instead of being re-armed.
    bool io_no_multishot_rearm = false;
    // O13: the I/O driver drains the signal eventfd but wakes no signal stream (a delivery to
    // a parked runtime is lost until something else wakes it).
    bool io_signal_no_dispatch = false;
    // O13: a child dropped without wait is never reaped (it stays a zombie).
    bool process_no_orphan_reap = false;
    // O9: socket writes without MSG_NOSIGNAL: writing to a closed peer raises SIGPIPE.
    bool io_no_msg_nosignal = false;
    // O10: a read at end of stream reports connection_reset instead of 0.
    bool io_eof_as_error = false;
    // O12: a socket destroyed while its runtime shuts down is deregistered but not closed.
    bool io_leak_at_shutdown = false;
    // O16: a reader's clear after EAGAIN erases the readable bit even when the driver delivered
    // a newer edge after the reader's syscall (the event-count check skipped).
    bool io_clear_ignores_seq = false;
    // D1: the stall detector samples the workers but never finds one stalled (no report).
    bool stall_detector_blind = false;
    // Makes io_uring setup fail with this errno (0: off), for tests of automatic selection on
    // machines where io_uring works.
    int io_uring_setup_errno = 0;
    // Runs on a worker right before it publishes itself as parked (after its own queues were
    // found empty); tests use it to land work in exactly that window.
    std::function<void(unsigned worker)> before_park_commit;
    // Runs in a stream read on a worker right after its recv(2) met EAGAIN, before it clears
    // the readable bit: O16's window. `delivered()` turns the I/O driver without waiting when no
    // other thread holds it (one that does is woken by the edge itself) and reads the
    // descriptor's count of delivered events: the checker lands a new edge in the window and
    // calls it until the edge is delivered.
    std::function<void(const std::function<std::uint32_t()>& delivered)> io_after_eagain;
    // Runs on the last searcher as it starts spinning before parking (config::park_spin), before
    // its first look; tests use it to queue work while it spins.
    std::function<void(unsigned worker)> on_park_spin;
};

// A semaphore's negative controls: serve waiters newest first and let released permits sit in
// the free count while waiters are queued (X2); lose what an abandoned waiter had been granted
// instead of passing it on (X5: a value granted to an aborted receiver is dropped).
struct semaphore_faults {
    bool lifo = false;
    bool float_permits = false;
    bool lose_abandoned_grant = false;
};

}  // namespace blitz::testing
