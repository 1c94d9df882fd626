#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mutation testing of the runtime (issue 15): does the suite catch defects in the code?

Each entry of CATALOGUE is one small source defect: a file, an exact snippet that must occur
once, and what replaces it. The script copies the committed tree (git archive HEAD) to
build/mutants/src, builds it once unmutated (the suites must pass there), then for each mutant:
applies it, rebuilds incrementally (blitz and blitz_unit_tests), runs `blitz conformance --quick`
and the unit tests, each under a hang guard, records which checkers and tests failed, and puts
the file back. The table goes to results/<machine>/mutants.{md,json}.

A mutant is killed when a checker reports a violation or an uncaught control, a unit test fails,
or a suite hangs past its guard (the conformance harness, run with --hang-limit 20 --max-hangs 1,
reports the first checker without progress for 20 s as a hang and stops there). A survivor is either a hole in the suite or an equivalent mutant, which
the table must explain (EQUIVALENT below).

Usage: scripts/mutate.py [--only ID,ID...] [--machine NAME] [--jobs N]
Runs on demand (`make mutants`), not in `make test`: it takes about two minutes per mutant here.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (id, file, find, replace, what the defect is)
CATALOGUE = [
    ("poll-histogram-timed-once", "runtime/src/sched/worker.cpp",
     "    poll_countdown_ = timed_at - polls + 1;",
     "    poll_countdown_ = ~0u;",
     "the poll-time histogram times one poll and then (for 4 billion polls) none: poll_ns "
     "stops counting one poll in 64"),
    ("followed-wake-not-recorded", "runtime/src/sched/worker.cpp",
     "    (followed_io_ ? io_hist_ : schedule_hist_).record(cycle_clock::since(followed_at_, now));",
     "    (followed_io_ ? schedule_hist_ : io_hist_).record(cycle_clock::since(followed_at_, now));",
     "a followed wake is recorded in the other histogram: I/O wakes count as task wakes and task "
     "wakes as I/O"),
    ("dump-claims-any-state", "runtime/src/task/task_header.cpp",
     "        if (lifecycle_of(s) != lifecycle::idle) return false;",
     "        if (lifecycle_of(s) == lifecycle::complete) return false;",
     "the dump claims a task that is queued or running, as if it were idle: two threads own it "
     "(issue 46's claim)"),
    ("dump-release-loses-wake", "runtime/src/sched/worker.cpp",
     "                requeue_given_back(again);",
     "                (void)again;",
     "a task woken or aborted while the dump held it is never queued again: the wake is lost "
     "(issue 46's claim)"),
    ("dump-not-serialized", "runtime/src/sched/scheduler.cpp",
     "    std::lock_guard<std::mutex> one_at_a_time(dump_mu_);",
     "",
     "two dumps at once overwrite each other's request in a worker's slot: one waits for an "
     "answer that went to the other, and takes back (and frees) a request that is not its own "
     "(issue 46, task dump)"),
    ("dump-busy-spin-deaf", "runtime/src/sched/worker.cpp",
     "        if (dump_slot_.load(std::memory_order_relaxed) != nullptr) [[unlikely]]\n            return true;",
     "",
     "a busy-mode worker spinning for work never returns to its tick: a task dump waits the "
     "whole wait for it and reports it as not answering (issue 46)"),
    ("dump-chain-stops-at-first-frame", "runtime/src/sched/task_dump.cpp",
     "        h = p.continuation();",
     "        h = {};",
     "the await chain stops at the innermost coroutine: the frames awaiting it are not shown "
     "(issue 46, task dump)"),
    ("dump-leaf-undescribed", "runtime/src/task/context.cpp",
     "        hook->describe = describe;",
     "        hook->describe = nullptr;",
     "suspend_current drops the awaitable's describe function: the dump cannot say what a task "
     "waits on (issue 46, task dump)"),
    ("inspect-serves-any-user", "runtime/src/rt/inspect_server.cpp",
     "cred.uid != ::geteuid()) {",
     "cred.uid == ~0u) {",
     "the inspect socket's credential check passes everyone: another user opening a 0666 socket "
     "file reads the program's metrics and dump (issue 46)"),
    ("stall-doze-never-nudged", "runtime/src/sched/stall_watchdog.cpp",
     "    if (!doze_.wake()) return;",
     "    if (true || !doze_.wake()) return;",
     "a worker's first poll after an idle spell does not wake the dozing stall detector: a stall "
     "that begins then is found up to a whole threshold late (D1)"),
    ("stall-park-exit-no-nudge", "runtime/src/sched/worker.cpp",
     "    set_closed(closed_parking, false);\n    nudge_dozing_watchdog();\n    flush_collected();",
     "    set_closed(closed_parking, false);\n    flush_collected();",
     "a worker that slept in its park does not wake the dozing stall detector on the way out: a "
     "stall in its first poll after an idle spell is found up to a whole threshold late (D1)"),
    ("histogram-poll-sampled-half", "runtime/src/sched/worker.cpp",
     "        timed_at += poll_sample_every;",
     "        timed_at += 2 * poll_sample_every;",
     "the poll histogram times one poll in 128 within a tick instead of one in 64: the samples "
     "undercount (issue 46, latency histograms)"),
    ("site-entry-not-written", "runtime/src/task/site_table.hpp",
     "        sites_[index].store(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(k)),\n"
     "                            std::memory_order_relaxed);\n",
     "",
     "the table of spawn sites hands out an index without its reverse entry: every task's spawn "
     "site reads back empty (issue 46)"),
    ("spawn-site-not-indexed", "runtime/src/sched/scheduler.cpp",
     "inspect_enabled ? spawn_site_index(site) : 0",
     "0",
     "a spawn records no site: the stall report and the dump cannot say where a task came from "
     "(issue 46)"),
    ("ct-foreign-completion-no-wake", "runtime/src/sched/scheduler.cpp",
     "    if (!s->own_worker()) s->workers_[0]->unpark();",
     "",
     "a current-thread runtime's block_on task completed on another thread (an abort) does not "
     "wake the driver asleep in its park: block_on waits for the park timeout (issue 47)"),
    ("ct-never-parked", "runtime/src/sched/scheduler.cpp",
     "    if (current_thread()) workers_[0]->start_parked();",
     "",
     "a current-thread runtime's worker does not count as parked before its first drive: "
     "spawns from other threads claim nobody, and a driver asleep in its park is not woken "
     "(issue 47)"),
    ("ct-waiter-not-notified", "runtime/src/sched/scheduler.cpp",
     "    core_taken_ = false;\n    if (core_waiters_ != 0) core_cv_.notify_all();\n}",
     "    core_taken_ = false;\n}",
     "a thread waiting for a current-thread runtime's core is not told when the driver gives it "
     "back: its block_on waits for ever (issue 47)"),
    ("ct-drive-ignores-root", "runtime/src/sched/worker.cpp",
     "    while (!root->is_complete() && !sched_.shutting_down()) {",
     "    while (!sched_.shutting_down()) {",
     "a current-thread drive does not stop when its task completes: block_on never returns "
     "(issue 47)"),
    ("ct-auto-advance-ignores-blocking", "runtime/src/rt/runtime_core.cpp",
     "            if (b.threads - b.idle + b.queued > 0) return false;\n",
     "",
     "a paused current-thread runtime jumps its clock while spawn_blocking work runs: a timeout "
     "on that work fires at once (issue 47)"),
    ("ct-paused-never-advances", "runtime/src/sched/worker.cpp",
     "        if (!tick() && !root->is_complete() && !sched_.auto_advance()) park();",
     "        if (!tick() && !root->is_complete()) park();",
     "a paused current-thread runtime never moves its clock: a BLITZ_TEST_PAUSED body that "
     "sleeps waits for ever (issue 47)"),
    ("ct-driver-keeps-budget", "runtime/src/sched/worker.cpp",
     "    tl_coop_budget = -1;\n",
     "",
     "a thread that drove a current-thread runtime keeps its last poll's cooperative budget: as "
     "a plain thread it reads as out of budget (issue 47)"),
    ("consume-budget-never-yields", "runtime/include/blitz/coop.hpp",
     "        if (detail::coop_exhausted()) return false;\n        detail::coop_spend();",
     "        detail::coop_spend();",
     "co_await blitz::consume_budget() never yields: a loop that consumes budget keeps its "
     "worker (B2, issue 47)"),
    ("cpu-quota-ignored", "runtime/src/topo/cpu_budget.cpp",
     "    if (b.quota > 0) {\n        // Rounded up",
     "    if (false) {\n        // Rounded up",
     "the default worker count ignores the cgroup CPU quota: a container limited to 2 CPUs on a "
     "64-core host starts 64 workers (issue 47)"),
    ("cpu-affinity-ignored", "runtime/src/topo/cpu_budget.cpp",
     "unsigned n = b.affinity != 0 ? b.affinity : b.online;",
     "unsigned n = b.online;",
     "the default worker count ignores the affinity mask: a process started under taskset runs a "
     "worker per online CPU (issue 47)"),
    ("cgroup-path-not-walked", "runtime/src/topo/cpu_budget.cpp",
     "        if (dir.size() <= point.size()) break;",
     "        break;",
     "only the process's own cgroup is read: a quota set on a parent (a pod's, a slice's) is "
     "missed (issue 47)"),
    ("stall-never-suspected", "runtime/src/sched/stall_watchdog.cpp",
     "if (w.ph == phase::watching && now - w.first >= threshold_ &&",
     "if (w.ph == phase::watching && now - w.first >= threshold_ * 1000 &&",
     "the stall detector waits a thousand thresholds before it suspects a worker: stalls go "
     "unreported (D1)"),
    ("stall-reported-every-sample", "runtime/src/sched/stall_watchdog.cpp",
     "    w.ph = phase::reported;",
     "    w.ph = phase::watching;",
     "a reported stall is not remembered: it is reported again at every threshold it lasts (D1)"),
    ("stall-handler-sees-no-task", "runtime/src/sched/stall_watchdog.cpp",
     "    p->polling = t != nullptr;",
     "    p->polling = false;",
     "the stack signal's handler never finds the running task, so the watchdog takes every "
     "stalled worker for an idle one and reports nothing (D1)"),
    ("poll-budget-never-set", "runtime/src/sched/worker.cpp",
     "      poll_budget_(s.cfg().coop_budget_per_poll ? static_cast<int>(s.cfg().coop_budget_per_poll)",
     "      poll_budget_(false ? static_cast<int>(s.cfg().coop_budget_per_poll)",
     "the budget a worker keeps for its polls is always 'none': an always-ready await never "
     "yields (B2, O14)"),
    ("tick-budget-never-set", "runtime/src/sched/worker.cpp",
     "      budget_per_tick_(s.cfg().budget_per_tick),",
     "      budget_per_tick_(~0u),",
     "the tick budget a worker keeps is unbounded: a tick never ends while work is queued, so "
     "timers and I/O wait behind it (B1)"),
    ("lifo-cap-off-by-one", "runtime/src/sched/worker.cpp",
     "if (lifo_polls_ < lifo_cap_) {",
     "if (lifo_polls_ <= lifo_cap_) {",
     "the LIFO cap allows one poll too many per tick (L2)"),
    ("batch-reused-while-queued", "runtime/src/sched/local_queue.cpp",
     "if (pool_size_ != 0 && pool_[pool_head_]->reusable()) {",
     "if (pool_size_ != 0) {",
     "an overflow refills its oldest batch while the global queue still holds it (G1, Q4)"),
    ("batch-handed-back-early", "runtime/src/sched/global_queue.cpp",
     "if (b->taken_ == b->count_ || BLITZ_MODEL_DEFECT(batch_handed_back_early)) {",
     "if (true) {",
     "a fetch that takes part of a batch drops the rest and hands it back (G1)"),
    ("notify-ignores-searchers", "runtime/src/sched/idle_state.cpp",
     "if (searching != 0 && !BLITZ_FAULT(faults_.ignore_searchers)) return false;",
     "(void)searching;",
     "a producer wakes a parked worker although a searcher exists (I3)"),
    ("park-spin-uncounted", "runtime/src/sched/worker.cpp",
     "    if (sched_.idle().num_searching() != 1) return false;\n    bump(c_park_spins);",
     "    if (sched_.idle().num_searching() != 1) return false;\n    searching_ = false;\n"
     "    (void)sched_.idle().transition_from_searching();\n    bump(c_park_spins);",
     "the last searcher stops counting as one while it spins before parking (config::park_spin), "
     "so producers wake a parked worker that finds nothing"),
    ("adaptive-spin-timeouts-count-as-work", "runtime/src/sched/worker.cpp",
     "end_idle_spell(idle_from, found_work && !sched_.shutting_down());",
     "end_idle_spell(idle_from, !sched_.shutting_down());",
     "a park that timed out counts as an idle spell that ended with work, so the adaptive spin "
     "budget (config::park_spin_adaptive) of an idle runtime grows instead of falling to 0"),
    ("yield-not-rescheduled", "runtime/src/task/task_header.cpp",
     "yielded = std::exchange(tl_yield_requested, false);",
     "yielded = (tl_yield_requested = false);",
     "a yield is forgotten after the poll: the task goes IDLE with no waker and never runs "
     "again (K2)"),
    ("block-cache-charge-never-refunded", "runtime/src/task/task_header.cpp",
     "            charged_ -= refund;\n            wide_charged.fetch_sub(refund, std::memory_order_relaxed);",
     "            charged_ -= refund;",
     "a block taken from beyond a plain thread's base is not refunded to the shared budget, so "
     "the budget leaks until no thread outside the runtime may cache beyond its base"),
    ("block-cache-workers-unbounded", "runtime/src/task/task_header.cpp",
     "    return current_runtime() == nullptr && draining_runtime() == nullptr;",
     "    return true;",
     "workers cache beyond their base too, handing fork-join work scattered blocks "
     "(results/epyc-2c-kvm/block-depot)"),
    ("oneshot-cell-leaves-sender-open", "runtime/include/blitz/chan/oneshot.hpp",
     "if (!made_ || BLITZ_MODEL_DEFECT(oneshot_cell_no_close)) return;",
     "return;",
     "a oneshot_cell's destructor leaves its live sender open, so a later send writes into the "
     "dead cell instead of getting its value back (X6)"),
    ("steal-floor-half", "runtime/src/sched/local_queue.cpp",
     "avail - avail / 2;  // ceil(avail / 2)",
     "avail / 2 + (avail == 1);  // floor, but at least one",
     "a steal takes floor(n/2) instead of ceil(n/2) (Q5)"),
    ("steal-all", "runtime/src/sched/local_queue.cpp",
     "avail - avail / 2;  // ceil(avail / 2)",
     "avail;  // everything",
     "a steal takes everything (Q5)"),
    ("searcher-cap-removed", "runtime/src/sched/idle_state.cpp",
     "if (2 * a.gate_seen >= cap_at) return a;",
     "(void)0;",
     "searchers admitted without the 2 * searching < W gate (I1)"),
    ("claim-highest-bit", "runtime/src/sched/idle_state.cpp",
     ": static_cast<unsigned>(std::countr_zero(bm));",
     ": 63u - static_cast<unsigned>(std::countl_zero(bm));",
     "a waker claims the highest parked bit instead of the lowest (I2)"),
    ("claim-without-clearing", "runtime/src/sched/idle_state.cpp",
     "const std::uint64_t prev = word.fetch_and(~bit, std::memory_order_seq_cst);",
     "const std::uint64_t prev = word.load(std::memory_order_seq_cst);",
     "a wake that does not clear (claim) the parked worker's bit (I2, I6)"),
    ("summary-second-look-removed", "runtime/src/sched/idle_state.cpp",
     "if (!BLITZ_MODEL_DEFECT(summary_skips_second_look) &&",
     "if (false &&",
     "above 64 workers a claimer clears a summary bit without looking at its word again, so a "
     "park in between is hidden (I7)"),
    ("worker-ring-mailbox-ignored", "runtime/src/io/worker_rings.cpp",
     "for (const std::uint64_t ud : w.taken) w.r->cancel_user_data(ud);",
     "for (const std::uint64_t ud : w.taken) (void)ud;",
     "busy mode: a cancel handed to a worker ring's owner is never submitted (issue 20)"),
    ("worker-ring-staged-not-flushed", "runtime/src/io/uring_backend.cpp",
     "    const unsigned to_submit = publish_staged();\n    if (to_submit != 0 ||",
     "    const unsigned to_submit = 0;\n    if (to_submit != 0 ||",
     "a worker's look at its own ring does not submit what the last tick staged: operations wait "
     "for the worker's next park (for ever in busy mode, issues 20 and 44)"),
    ("last-searcher-wake-removed", "runtime/src/sched/worker.cpp",
     "if (last && !BLITZ_FAULT(cfg_.debug.skip_last_searcher_wake)) {",
     "if (false) {",
     "the last searcher to find work wakes nobody (I8)"),
    ("final-check-removed", "runtime/src/sched/worker.cpp",
     "if ((final_check && sched_.work_pending()) || missed_push || pinned_waiting ||",
     "if (missed_push || pinned_waiting ||",
     "the last searcher parks without its final check of every queue (I4)"),
    ("cascade-skipped", "runtime/src/time/timer_wheel.hpp",
     "if (BLITZ_FAULT(faults_.no_cascade) && x->level > 0) {",
     "if (x->level > 0) {",
     "higher wheel levels fire their slot instead of cascading (T3)"),
    ("timer-one-tick-early", "runtime/src/time/timer_driver.cpp",
     "const std::uint64_t up = whole + (d % tick != duration::zero() ? 1 : 0);  // never early",
     "const std::uint64_t up = whole;",
     "a deadline rounds down: timers fire up to a tick early (T4, T6)"),
    ("timer-fire-own-shard-only", "runtime/src/time/timer_driver.cpp",
     "    for (unsigned k = 0; k < shard_count_; ++k) {\n        shard& sh = shards_[(home + k) % shard_count_];",
     "    for (unsigned k = 0; k < 1; ++k) {\n        shard& sh = shards_[(home + k) % shard_count_];",
     "a worker fires only its own shard's timers: a parked or stuck worker's wait (T6, T7)"),
    ("timer-disarm-calling-shard", "runtime/src/time/timer_driver.cpp",
     "    shard& sh = shards_[home];",
     "    shard& sh = shards_[calling_shard()];",
     "a cancel locks the calling thread's shard, not the slot's: a task that moved unlinks "
     "its timer from another wheel"),
    ("timer-arm-earlier-untold", "runtime/src/time/timer_driver.cpp",
     "        earlier = next < before;",
     "        earlier = false;",
     "an arm that makes its shard's expiry earlier tells no parked worker (T7)"),
    ("timer-disarm-unpublished", "runtime/src/time/timer_driver.cpp",
     "        publish_next(sh);  // the shard's expiry may move later",
     "",
     "a cancel leaves its shard's expiry at the cancelled deadline: workers wake for nothing"),
    ("elapsed-sleep-never-yields", "runtime/include/blitz/time.hpp",
     "        if (detail::coop_exhausted()) {\n            coop_yield_ = true;  // due, but",
     "        if (false) {\n            coop_yield_ = true;  // due, but",
     "an elapsed sleep completes at once whatever the budget: a loop over elapsed deadlines "
     "keeps its worker (B2)"),
    ("budget-not-counted", "runtime/src/sched/worker.cpp",
     "        run_task(t, polls, timed_at);\n        ++polls;\n",
     "        run_task(t, polls, timed_at);\n",
     "the tick budget is never counted: a tick ends only when work runs out (B1, T8)"),
    ("notified-dropped-after-pending-poll", "runtime/src/task/task_header.cpp",
     "if (yielded || (s & notified) || cancel_due(s)) {\n            ns = with_lifecycle(s, lifecycle::scheduled) & ~notified;  // keep the queue ref",
     "if (yielded || cancel_due(s)) {\n            ns = with_lifecycle(s, lifecycle::scheduled) & ~notified;  // keep the queue ref",
     "a wake that arrives while the task runs is dropped after a pending poll (K2)"),
    ("batch-size-off-by-one", "runtime/src/sched/global_queue.cpp",
     "std::uint64_t share = std::clamp<std::uint64_t>(len / std::max(workers, 1u), lo, hi);",
     "std::uint64_t share = std::clamp<std::uint64_t>(len / std::max(workers, 1u), lo, hi) + 1;",
     "a global fetch takes one task more than its share (G2)"),
    ("overflow-moves-all", "runtime/src/sched/local_queue.cpp",
     "const std::uint32_t n = BLITZ_FAULT(overflow_all) ? capacity : capacity / 2;",
     "const std::uint32_t n = capacity;",
     "a full ring moves every task to the global queue instead of half (Q4)"),
    ("channel-send-after-close-lost", "runtime/include/blitz/chan/channel.hpp",
     "if (closed_) return send_result<T>::back(send_result<T>::status::closed, std::move(v_));",
     "if (closed_) return send_result<T>::ok();",
     "a send to a channel whose receivers are gone reports success and drops the value (X5)"),
    ("channel-waiting-send-lost", "runtime/include/blitz/chan/channel.hpp",
     "if (BLITZ_FAULT(s_.fault_drop_waiting_send) && !ready_first_) {",
     "if (!ready_first_ && s_.capacity() == 1) {",
     "a send that had to wait loses its value on capacity-1 channels (X5)"),
    ("semaphore-loses-leftovers", "runtime/src/sync/semaphore.cpp",
     "    settle_locked(n);  // leftovers to the free count; the queued bit goes with the last waiter",
     "    settle_locked(0);  // leftovers lost",
     "a semaphore release loses the permits left over after the waiters it served (X2)"),
    ("periodic-check-skipped", "runtime/src/sched/worker.cpp",
     "if (polls_since_global_ >= interval_ &&",
     "if (false && polls_since_global_ >= interval_ &&",
     "the periodic global check is never made (G4, G6)"),
    ("arm-never-wakes-driver", "runtime/src/rt/driver_stack.cpp",
     "void driver_stack::expiry_moved_earlier(timer_driver::clock::time_point at) noexcept { cover(at); }",
     "void driver_stack::expiry_moved_earlier(timer_driver::clock::time_point) noexcept {}",
     "arming an earlier timer never wakes a parked worker (T7)"),
    ("coverage-never-wakes", "runtime/src/rt/driver_stack.cpp",
     "if (!anyone_parked) return;  // running workers fire timers at the start of every tick\n"
     "    if (scheduler* s = sched_.load(std::memory_order_acquire)) s->notify_parked();",
     "if (!anyone_parked) return;\n    (void)sched_;",
     "timer coverage never wakes anyone (T7)"),
    ("timers-only-when-idle", "runtime/src/sched/worker.cpp",
     "BLITZ_FAULT(cfg_.debug.timers_only_when_idle) && (lifo_ || given_back_ || !ring_.empty());",
     "(lifo_ || given_back_ || !ring_.empty());",
     "a worker fires timers only at ticks that start with empty queues (T8)"),
    ("periodic-fetch-batches", "runtime/src/sched/worker.cpp",
     "if (periodic && !BLITZ_FAULT(cfg_.debug.periodic_fetch_batches)) {",
     "if (false) {",
     "the periodic check fetches a batch, churning overflowed tasks (G7)"),
    ("periodic-takes-one", "runtime/src/sched/worker.cpp",
     "room = 1 + (fill ? periodic_fill - ring_len : 0);",
     "room = 1;",
     "the periodic check takes one task behind a yielding loop (G7 as amended by issue 21)"),
    ("timeout-wake-walks-all", "runtime/src/sched/worker.cpp",
     "const bool sampling = woke_by_timeout_ && !BLITZ_FAULT(cfg_.debug.full_walk_on_timeout);",
     "const bool sampling = false;",
     "a worker woken by its park timeout searches every ring again (I10)"),
    ("given-back-first", "runtime/src/sched/worker.cpp",
     "            given_back_ = t;\n",
     "            requeue_given_back(t);\n",
     "a yielded task rejoins the ring before the tasks its periodic check fetches (G7)"),
    ("channel-turn-unwrapped", "runtime/include/blitz/chan/channel.hpp",
     "s.turn.store((full_turn(p) + 1) & turn_mask_, std::memory_order_release);",
     "s.turn.store(full_turn(p) + 1, std::memory_order_release);",
     "a channel slot's turn does not wrap with its 32-bit position, so the lap after the last "
     "never finds it free (X5)"),
    ("channel-ticket-apart", "runtime/include/blitz/sync/semaphore.hpp",
     "ticket = static_cast<std::uint32_t>(before >> ticket_shift);",
     "ticket = next_ticket() - 1;",
     "try_send reads its position after taking the slot, so two senders can share one (X5)"),
    ("barrier-one-party-lost-count", "runtime/include/blitz/sync/notify.hpp",
     "generation_ = b_.generation_.fetch_add(1, std::memory_order_relaxed);",
     "generation_ = b_.generation_.load(std::memory_order_relaxed); "
     "b_.generation_.store(generation_ + 1, std::memory_order_relaxed);",
     "a one-party barrier counts its generations with a load and a store, losing concurrent "
     "arrivals (X4)"),
    ("detach-keeps-join-interest", "runtime/src/task/task_header.cpp",
     "drop_refs(ref_one + join_interest - detached, 1);",
     "drop_refs(ref_one - detached, 1);",
     "a detached handle keeps its join interest, so an exception nobody will see goes "
     "unreported (K5)"),
    ("complete-drops-past-join-waker", "runtime/src/task/task_header.cpp",
     "        if (!(s & join_waker) || BLITZ_MODEL_DEFECT(complete_drops_with_waker))",
     "        if (true)",
     "completion drops its references in the same step even when a join waker waits, and "
     "then reads the waker from a task the joiner may have freed (K3, K5)"),
    ("complete-unshared-ignores-refs", "runtime/src/task/task_header.cpp",
     "    if (refs_of(state_.load(std::memory_order_acquire)) != 2 &&",
     "    if (false &&",
     "a task that ends in its first poll frees its block at once even while its join handle or "
     "a waker still holds it (K3)"),
    ("lifo-cap-per-tick", "runtime/src/sched/worker.hpp",
     "        source_ = s;\n        lifo_polls_ = 0;\n",
     "        source_ = s;\n",
     "a task from the ring, the global queue or a steal no longer starts the LIFO count again: "
     "the cap counts LIFO polls per tick, not in a row (L2)"),
    ("lifo-cap-never-reached", "runtime/src/sched/worker.cpp",
     "            ++lifo_polls_;\n",
     "            lifo_polls_ = 0;\n",
     "the LIFO count restarts at every poll, so the cap is never reached (L2, L3)"),
    ("unlisted-not-cancelled", "runtime/src/sched/scheduler.cpp",
     "if (!task_list::listed(t) && !t->is_complete()) {",
     "if (false) {",
     "shutdown drops a never-polled task from outside without cancelling it (K3)"),
    ("spawn-direct-queues-after-shutdown", "runtime/src/sched/scheduler.cpp",
     "[[gnu::always_inline]] inline void scheduler::spawn_here(task_header* t) noexcept {\n    if (shutting_down()) {",
     "[[gnu::always_inline]] inline void scheduler::spawn_here(task_header* t) noexcept {\n    if (false) {",
     "a spawn during shutdown (a frame's destructor spawning) is queued where nobody runs or "
     "cancels it (K3)"),
    ("block-cache-never-closed", "runtime/src/task/task_header.cpp",
     "    enrolled_ = true;\n    tl_block_closer.armed = true;",
     "    enrolled_ = true;",
     "a thread's block cache is never closed at its exit: its blocks, its home and its charge "
     "against the shared budget leak"),
    ("block-cache-ready-while-charged", "runtime/src/task/task_header.cpp",
     "ready_ = enrolled_ && alive_ && home_ != unclaimed && charged_ == 0;",
     "ready_ = enrolled_ && alive_ && home_ != unclaimed;",
     "the fast take runs while the thread holds blocks charged to the shared budget, so the "
     "charge is never refunded"),
    ("spawn-fast-path-while-parking", "runtime/src/sched/worker.hpp",
     "if (lifo_ != nullptr || slot_closed_ != 0) return false;",
     "if (lifo_ != nullptr || (slot_closed_ & ~closed_parking) != 0) return false;",
     "a spawn on a worker on its way to park takes the LIFO slot it has already emptied (L4)"),
    ("fresh-header-kept-after-throw", "runtime/src/task/task_header.cpp",
     "        if (tl_fresh_header == h) [[unlikely]]\n            tl_fresh_header = nullptr;\n",
     "",
     "a frame freed because a parameter's copy threw leaves its header fresh, to be claimed by "
     "a later frame at the same address"),
    ("no-time-bound", "runtime/src/sched/worker.cpp",
     "        polls_since_global_ = std::max(polls_since_global_, interval_);\n    }\n}",
     "    }\n}",
     "the periodic check follows the poll count only (G8)"),
    ("interval-frozen", "runtime/src/sched/policy.hpp",
     "return static_cast<unsigned>(std::clamp(target_ns / avg_ns, double(lo), double(hi)));",
     "(void)target_ns; (void)avg_ns; return std::clamp(20u, lo, hi);",
     "the adaptive interval is frozen at its initial value (G5)"),
    ("ewma-ignores-history", "runtime/src/sched/policy.hpp",
     "return std::max(1.0, alpha * sample_ns + (1.0 - alpha) * avg_ns);",
     "(void)alpha; (void)avg_ns; return std::max(1.0, sample_ns);",
     "the poll-time average is the last sample only (G5)"),
    ("no-wake-on-local-push", "runtime/src/sched/scheduler.cpp",
     "        push_ring(prev);  // I9: visible to thieves now, so a parked worker may help\n        if (!BLITZ_FAULT(cfg_.debug.no_wake_on_local_push)) sched_.notify_parked_for_local();",
     "        push_ring(prev);  // I9: visible to thieves now, so a parked worker may help",
     "a worker that pushes work to its ring never wakes a parked peer (I9)"),
    ("unpark-without-futex-wake", "runtime/src/sched/parker.cpp",
     "if (prev == parked && !BLITZ_FAULT(fault_skip_wake_)) futex_wake_one(word_);",
     "if (prev == parked && !BLITZ_FAULT(fault_skip_wake_)) (void)0;",
     "an unpark stores the token but never wakes the futex (I5)"),
    ("global-queue-length-kept", "runtime/src/sched/global_queue.cpp",
     "if (n) len_.fetch_sub(n, std::memory_order_seq_cst);",
     "(void)0;",
     "a fetch does not take its tasks off the global queue's length (G1, I4)"),
    ("lifo-while-parking", "runtime/src/sched/worker.hpp",
     "        return collecting() || !transitioning_to_park() ||\n",
     "        return true ||\n",
     "wakes from a parking worker still go to its LIFO slot (L4)"),
    ("victim-start-fixed", "runtime/src/sched/worker.cpp",
     "const unsigned start = BLITZ_FAULT(cfg_.debug.fixed_victim_start) ? 0 : rng_.bounded(w - 1);",
     "const unsigned start = 0;",
     "every victim walk starts at the same worker (Q7)"),
    ("ring-pops-newest", "runtime/src/sched/local_queue.cpp",
     "if (BLITZ_FAULT(faults_.pop_from_tail)) [[unlikely]] {",
     "if (true) {",
     "the owner pops the newest ring task (LIFO) instead of the oldest (Q3)"),
    ("disarm-keeps-entry", "runtime/src/time/timer_wheel.cpp",
     "if (!e->linked() || BLITZ_FAULT(faults_.remove_keeps_entry)) return;",
     "if (true) return;",
     "cancelling a timer leaves it in the wheel (T5)"),
    ("timeout-wake-counted-as-claim", "runtime/src/sched/worker.cpp",
     "bump(BLITZ_FAULT(cfg_.debug.miscount_timeout_wakes) ? c_unparks_notified\n                                                                : c_unparks_timeout);",
     "bump(c_unparks_notified);",
     "a park timeout is counted as a claimed wake (I6)"),
    ("scheduled-io-clear-ignores-seq", "runtime/src/io/scheduled_io.cpp",
     "    while (seq_of(cur) == ev.seq || BLITZ_MODEL_DEFECT(scheduled_io_clear_ignores_seq)) {",
     "    for (;;) {",
     "a reader's clear after EAGAIN erases the readable bit even when a newer edge arrived "
     "after its syscall: with edge-triggered epoll it then waits with data in the socket (O16)"),
    ("file-ring-never-reaped", "runtime/src/io/epoll_backend.cpp",
     "            reported += files_->wait(std::chrono::nanoseconds(0), sink);",
     "            (void)0;",
     "epoll sees the file ring's descriptor readable but never reaps its completion queue: file "
     "operations under automatic selection never complete"),
    ("lazy-poll-never-armed", "runtime/src/io/io_driver.cpp",
     "    if (!s->claim_poll()) return;\n    try {",
     "    if (s->claim_poll() || true) return;\n    try {",
     "with worker rings, a task that waits for readiness never arms the descriptor's poll: "
     "accepts, writes on a full socket and readable() wait for ever (issue 44)"),
    ("ring-unpark-dropped", "runtime/src/rt/driver_stack.cpp",
     "            if (!BLITZ_FAULT(faults_.no_driver_wake)) io_->wake_worker(index);",
     "            (void)index;",
     "an unpark of a worker asleep in its own ring stores the token but never wakes the ring: "
     "the worker sleeps on until its ring completes something or its park times out"),
    ("span-read-overtakes-queue", "runtime/src/io/io_ops.cpp",
     "        if (const std::size_t k = s->received().take(data, n)) return static_cast<long>(k);\n"
     "        lock_guard l(slab_.mu());\n"
     "        // Again under the lock buffers are queued under (see pooled_attempt).\n"
     "        if (const std::size_t k = s->received().take(data, n)) return static_cast<long>(k);",
     "        lock_guard l(slab_.mu());",
     "a stream read on a worker ring ignores the buffers its multishot receive queued: it "
     "reports the end of stream or arms again with bytes still waiting (O5, O10, O11)"),
    ("listener-queue-not-closed", "runtime/src/io/io_ops.cpp",
     "    for (const int a : queued) ::close(a);  // reset, as the kernel's queue would be",
     "    (void)queued;",
     "closing a listener leaves the connections its multishot accept queued open: their "
     "descriptors leak until the block is freed, and their clients wait (issue 44)"),
    ("accept-never-pauses", "runtime/src/io/io_ops.cpp",
     "                if (more && !op->cancel_sent && s->received().accepted() >= pool_queue_) {",
     "                if (false) {",
     "a listener's multishot accept keeps accepting however many connections wait unaccepted: "
     "the kernel's backlog bound is gone and descriptors run out (issue 44)"),
    ("automatic-picks-io-uring", "runtime/src/io/io_driver.cpp",
     "        cfg.io_backend == io_backend_kind::automatic && (busy || cfg.sqpoll_cpu >= 0);",
     "        cfg.io_backend == io_backend_kind::automatic;",
     "automatic selection picks io_uring in shared mode, where it costs twice epoll's CPU a "
     "request (issue 44)"),
    ("slab-generation-kept", "runtime/src/io/op_slab.cpp",
     "    ++op->gen;",
     "    (void)op->gen;",
     "a released operation state keeps its generation: a late completion or a handed cancel "
     "meant for its earlier use matches the new one (R3)"),
    ("deferred-close-never-closes", "runtime/src/io/op_slab.cpp",
     "if (--d.ops == 0 && d.close_fd >= 0) close_fd = std::exchange(d.close_fd, -1);",
     "if (--d.ops == 0 && false) close_fd = std::exchange(d.close_fd, -1);",
     "a descriptor closed with operations in flight is never closed after the last one (R5): "
     "its number and its registration leak"),
    ("copied-buffer-kept-out", "runtime/src/io/receive_queue.cpp",
     "            c.pool->release(c.id);\n            chunks_.pop_front();",
     "            chunks_.pop_front();",
     "a pool buffer whose bytes a read copied out to the end never goes back to its pool: the "
     "multishot receive runs dry and every later read falls back to the heap (R7)"),
    ("batched-sends-never", "runtime/src/io/io_driver.hpp",
     "        return batched_sends_ && rings_.own(i) != nullptr;",
     "        return false;",
     "config io_batched_sends is ignored: write_all stays a readiness write, never a SEND staged "
     "on the worker's ring"),
    ("send-zc-notification-result", "runtime/src/io/uring_backend.cpp",
     "sink.completed(op, notif ? op->zc_sent : c->res);",
     "sink.completed(op, c->res);",
     "a SEND_ZC's result is taken from its notification (0) instead of its first completion: "
     "write_owned reports nothing sent"),
    ("linked-timeout-cancel-returned", "runtime/include/blitz/net/socket.hpp",
     "        return a->op_ && blitz::detail::io_op_done(a->op_) && !blitz::detail::io_op_expired(a->op_);",
     "        return a->op_ && blitz::detail::io_op_done(a->op_);",
     "an owned read ended by its linked timeout wakes its awaiter with the kernel's ECANCELED: "
     "timeout() returns that error as the read's result instead of timed_out()"),
    ("hand-back-dropped", "runtime/src/task/task_header.cpp",
     "    } else if (theirs) {",
     "    } else if (false) {",
     "a task that completed on a worker other than its list's owner is never handed back: its "
     "block stays allocated until shutdown (K6: memory back at completion)"),
    ("home-never-sent", "runtime/src/task/task_header.cpp",
     "        if (h == 0 || h == home_) return false;  // nobody's, or ours: our own arena takes it",
     "        if (true) return false;",
     "a block the freeing thread has no room for goes to glibc's free there instead of back to "
     "the thread that allocated it (K7), which takes that thread's arena lock while it allocates"),
    ("home-not-stamped", "runtime/src/task/task_header.cpp",
     "    *block_cache::stamp_of(block, c) = tl_blocks.home();",
     "    *block_cache::stamp_of(block, c) = 0;",
     "blocks carry no home, so none goes back to its allocator (K7)"),
    ("home-never-taken-back", "runtime/src/task/task_header.cpp",
     "    if (!block && tl_blocks.take_home()) block = tl_blocks.take(c);",
     "    if (false) block = tl_blocks.take(c);",
     "a thread whose cache ran dry allocates from the heap instead of taking back what was "
     "returned to its home: the blocks wait there until it goes idle or exits (K7)"),
    ("home-batch-kept-at-idle", "runtime/src/task/task_header.cpp",
     "    tl_blocks.flush_outgoing();\n    (void)tl_blocks.take_home();",
     "    (void)tl_blocks.take_home();",
     "a worker going idle keeps the blocks it batched for other threads' homes until the batch "
     "fills or it exits (K7)"),
    ("notify-permit-dropped", "runtime/src/sync/notify.cpp",
     "        if (state_.compare_exchange_weak(s, with_permit(s),\n"
     "                                         BLITZ_ORDER(",
     "        if (state_.compare_exchange_weak(s, s,\n"
     "                                         BLITZ_ORDER(",
     "notify_one with nobody waiting stores no permit, so the next notified() waits for a "
     "notification that already happened (X4)"),
    ("notify-aborted-wake-kept", "runtime/src/sync/notify.cpp",
     "                b.complete(w);\n                waiters_changed_locked();\n"
     "            } else {\n                store_permit_locked();\n            }",
     "            }",
     "a waiter woken by notify_one and aborted before it resumed keeps the notification: the "
     "next waiter is not woken and no permit is stored (X4)"),
    ("timers-only-at-empty-ring", "runtime/src/sched/worker.cpp",
     "    const bool skip_maintain =\n"
     "        BLITZ_FAULT(cfg_.debug.timers_only_when_idle) && (lifo_ || given_back_ || !ring_.empty());",
     "    const bool skip_maintain = !ring_.empty();",
     "timers (and I/O) are turned only at ticks that start with an empty ring: a worker whose "
     "yielding tasks always leave one in the ring fires a due sleep hundreds of milliseconds late "
     "(T8 with two yielders)"),
    ("blocking-one-idle-for-all", "runtime/src/blocking/pool.cpp",
     "            BLITZ_FAULT(opt_.fault_one_idle_for_all) ? idle_ > 0 : idle_ >= queue_.size();",
     "            idle_ > 0;",
     "the blocking pool starts a thread only when none is idle: one idle thread stands for every "
     "queued job, so the jobs of a burst serialize and a job waiting on another of its burst "
     "stalls (X1's burst)"),
    ("select-winner-before-losers-settle", "runtime/src/task/select_scope.cpp",
     "    if (!losers_settled(i) && !BLITZ_FAULT(fault_select_skips_loser_settle())) {",
     "    if (!losers_settled(i) && false) {",
     "a select resumes its winner as soon as it is decided, while the tasks of a losing branch's "
     "scope still run (and the branch's drop then blocks the worker until they end)"),
    ("global-fetch-takes-one", "runtime/src/sched/worker.cpp",
     "    std::uint32_t room = BLITZ_FAULT(cfg_.debug.global_fetch_takes_one) ? 1 : 1 + ring_room;",
     "    std::uint32_t room = 1;",
     "a fetch from the global queue takes one task instead of a batch: injected bursts go one "
     "lock round trip per task (G2's lower bound)"),
    ("periodic-fill-past-interval", "runtime/src/sched/worker.cpp",
     ": std::min<std::uint32_t>(periodic_fill, interval_ / 4);",
     ": periodic_fill;",
     "the periodic check fills any ring below 64 tasks, however many polls they are ahead of the "
     "batch: under 100 us polls an injected task waits behind every local loop (G6)"),
    ("suspended-task-never-listed", "runtime/src/sched/scheduler.cpp",
     "    if (!BLITZ_FAULT(cfg_.debug.suspended_tasks_unlisted)) w->own(t);",
     "    (void)w;",
     "lazy listing without its list: a task that a poll left suspended is never listed, so "
     "shutdown cannot find an idle task (K3)"),
    ("never-listed-reference-kept", "runtime/src/sched/scheduler.cpp",
     "    if (!task_list::listed(t)) return released::mine;",
     "    if (!task_list::listed(t)) return released::unlisted;",
     "a task that completed without ever being listed keeps the list reference spawn reserved: "
     "its block is never freed (K3, lazy listing)"),
    ("lifo-count-reset-per-tick", "runtime/src/sched/worker.cpp",
     "    if (BLITZ_FAULT(cfg_.debug.lifo_count_per_tick)) lifo_polls_ = 0;",
     "    lifo_polls_ = 0;",
     "the LIFO count starts again at every tick: a pair that reached the cap on a tick's last poll "
     "runs three more polls while a queued task waits (L3 at the tick's edge, 2 x cap)"),
    ("timeout-look-never-skipped", "runtime/src/sched/worker.cpp",
     "    if (sampling && sched_.idle().num_parked() + 1 >= w &&",
     "    if (false && sched_.idle().num_parked() + 1 >= w &&",
     "a timeout wake of an idle runtime samples four rings although every other worker is parked "
     "and their rings are empty (I10's skip lost: idle work that grows with W)"),
    ("short-read-keeps-readiness", "runtime/include/blitz/detail/io_op.hpp",
     "            if (op_.drained(r)) io_clear_ready(sio_, ev);",
     "            if (false) io_clear_ready(sio_, ev);",
     "a stream read that emptied the socket keeps the readable bit: every request costs a "
     "second recv(2) that meets EAGAIN (Tokio's partial-read rule lost)"),
    ("mailbox-flag-never-set", "runtime/src/io/ring_mailbox.hpp",
     "        if (!flag_first) has_mail_.store(true, std::memory_order_release);",
     "",
     "a cancel posted to a worker ring's mailbox never raises its flag: the owner never takes it "
     "and the operation runs on in the kernel"),
    ("registration-freed-before-backend", "runtime/src/io/registration_set.cpp",
     "            if (!n->backend_done) {",
     "            if (false) {",
     "a deregistered block is freed at the next turn although the backend may still name it "
     "(io_uring: the poll's final completion is due), a use after free (R6)"),
    ("join-set-finished-before-adopt-lost", "runtime/src/sync/join_set.cpp",
     "    if (!e->task->set_join_waker(e->make_waker())) completed(e);",
     "    (void)e->task->set_join_waker(e->make_waker());",
     "a task that finished before its join_set registered its waker never reaches the ready "
     "list: join_next waits for it for ever (X8)"),
    ("join-set-completion-wakes-nobody", "runtime/src/sync/join_set.cpp",
     "        w = std::move(waiter_);\n    }\n    std::move(w).wake();",
     "    }\n    std::move(w).wake();",
     "a finished task's outcome goes to the ready list but the task waiting in join_next is not "
     "woken (X8)"),
    ("join-set-drop-does-not-abort", "runtime/src/sync/join_set.cpp",
     "    if (abort) abort_task(e->task);",
     "",
     "destroying a join_set (or replacing a key) lets the tasks run on instead of aborting them (JoinSet.Destroying"
     "TheSetAbortsItsTasks)"),
    ("join-set-ready-unseen", "runtime/src/sync/join_set.cpp",
     "    if (ready_head_ || count_ == 0 || (handed && *handed)) return true;",
     "    if (count_ == 0 || (handed && *handed)) return true;",
     "join_next does not see outcomes already on the ready list and waits for a wake that came "
     "before it (X8)"),
    ("buf-reader-drops-last-line", "runtime/include/blitz/buffered.hpp",
     "            if (!*r) co_return end_ - begin_;",
     "            if (!*r) co_return std::size_t{0};",
     "a stream that ends inside a line loses that last line: read_line reports the end with "
     "the bytes still buffered"),
    ("buf-reader-line-limit-ignored", "runtime/include/blitz/buffered.hpp",
     "            if (have >= limits_.max_line) co_return make_error_code(std::errc::value_too_large);",
     "",
     "a peer that never sends the delimiter makes the reader buffer without bound (max_line "
     "ignored)"),
    ("buf-reader-frame-limit-ignored", "runtime/include/blitz/buffered.hpp",
     "        if (len > limits_.max_frame) co_return make_error_code(std::errc::message_size);",
     "",
     "an announced frame length is trusted: a peer makes the reader allocate what it announces"),
    ("buf-writer-flush-assumes-whole-write", "runtime/include/blitz/buffered.hpp",
     "            begin_ += *r;",
     "            begin_ = buf_.size();",
     "a flush takes a short write of the stream for the whole buffer: bytes the stream did not "
     "take are dropped"),
    ("unconstrained-flag-ignored", "runtime/src/task/task_header.cpp",
     "    tl_coop_budget = coop_budget | (static_cast<std::int8_t>(flags_) >> 7);",
     "    tl_coop_budget = coop_budget;",
     "blitz::unconstrained holds only for the poll it starts in: after the task's first "
     "suspension its awaits yield for budget again (B2)"),
    # Issue 47, item 3: pinned tasks (P1).
    ("pinned-wake-goes-anywhere", "runtime/src/sched/scheduler.cpp",
     "void pinned_home::schedule(task_header* t, bool) noexcept { s_.place_pinned(t, home_); }",
     "void pinned_home::schedule(task_header* t, bool y) noexcept { s_.schedule(t, y); }",
     "a pinned task's wake is placed as any task's (the waker's LIFO slot, the global queue), "
     "so another worker polls it (P1)"),
    ("pinned-yield-to-ring", "runtime/src/sched/worker.cpp",
     "    if (t->scheduler() != &sched_ && !BLITZ_FAULT(cfg_.debug.pinned_tasks_migrate)) [[unlikely]] {",
     "    if (false) {",
     "a pinned task that yields goes back to the ring, where thieves take it (P1)"),
    ("pinned-inbox-never-taken-at-tick", "runtime/src/sched/worker.cpp",
     "    if (!pinned_inbox_.empty()) take_pinned_inbox();\n",
     "",
     "a tick does not take the pinned inbox: a pinned task woken or spawned on another thread "
     "waits until shutdown"),
    ("pinned-remote-push-wakes-nobody", "runtime/src/sched/worker.cpp",
     "    if ((sched_.idle().bitmap_of(index_) >> (index_ % 64)) & 1) unpark();",
     "",
     "a pinned task pushed to a parked home's inbox does not unpark it: it waits for the park "
     "timeout"),
    ("pinned-park-without-look", "runtime/src/sched/worker.cpp",
     "    const bool pinned_waiting = pinned_inbox_.seen_at_park();",
     "    const bool pinned_waiting = false;",
     "a home parks without looking at its pinned inbox after setting its parked bit: a push "
     "that read the bit before it was set wakes nobody"),
    ("pinned-always-before-ring", "runtime/src/sched/worker.cpp",
     "    if (!pinned_turn_ && !ring_.empty()) return nullptr;  // the ring's turn",
     "",
     "pinned tasks are always picked before the ring: yielding pinned tasks starve the ring's"),
    ("pinned-drain-skips-inbox", "runtime/src/sched/worker.hpp",
     "        take_pinned_inbox();\n        while (task_header* t = pinned_.pop()) f(t);\n    }",
     "    }",
     "the shutdown drain leaves the pinned inboxes: their tasks are never cancelled (K3)"),
]

# Mutants the suite cannot kill because they do not change behaviour, with the reason.
EQUIVALENT = {}


def run(cmd, cwd, timeout, log):
    """Runs cmd; returns (exit code or 'timeout', output). Output is also appended to log."""
    start = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, text=True, errors="replace")
        code, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        code = "timeout"
        out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}  [{code}, {time.time() - start:.0f} s]\n{out[-20000:]}\n")
    return code, out


def reparse(args):
    """Re-derives each row's killers from the run's log (after a parser fix), keeping the rest."""
    out_dir = args.out or os.path.join(ROOT, "results", args.machine)
    data = json.load(open(os.path.join(out_dir, "mutants.json")))
    text = open(os.path.join(ROOT, "build", "mutants", "mutants.log")).read()
    entries = []  # (command, code, output)
    for m in re.finditer(r"^\$ (.*?)  \[(\w+|-?\d+), \d+ s\]\n(.*?)(?=^\$ |\Z)", text, re.M | re.S):
        code = m.group(2)
        entries.append((m.group(1), code if code == "timeout" else int(code), m.group(3)))
    i = 0
    # the baseline: build, conformance, unit tests
    i += 3
    for row in data["mutants"]:
        build_code = entries[i][1]
        i += 1
        if build_code != 0:
            continue
        c = conformance_killers(entries[i][1], entries[i][2])
        u = unit_killers(entries[i + 1][1], entries[i + 1][2])
        i += 2
        row["conformance"], row["unit_tests"] = c, u
        row["verdict"] = "killed" if (c or u) else (
            "equivalent" if row["id"] in EQUIVALENT else "SURVIVED")
    write_table(out_dir, data["machine"], data["commit"], data["mutants"],
                data.get("planned", len(data["mutants"])))
    return 0


def sync_tree(frm, to):
    """Makes `to` a copy of `frm`, rewriting only files whose content differs."""
    for dirpath, _, files in os.walk(frm):
        rel = os.path.relpath(dirpath, frm)
        os.makedirs(os.path.join(to, rel), exist_ok=True)
        for name in files:
            a, b = os.path.join(dirpath, name), os.path.join(to, rel, name)
            data = open(a, "rb").read()
            if not os.path.exists(b) or open(b, "rb").read() != data:
                with open(b, "wb") as fh:
                    fh.write(data)
                shutil.copymode(a, b)
    for dirpath, _, files in os.walk(to):
        rel = os.path.relpath(dirpath, to)
        for name in files:
            if not os.path.exists(os.path.join(frm, rel, name)):
                os.remove(os.path.join(dirpath, name))


def conformance_killers(code, out):
    if code == "timeout":
        return ["hang (no verdict within the guard)"]
    # Exit 3 is a hang: a run the harness abandoned (the FAILED line names the rows) or the
    # suite's own watchdog (no FAILED line).
    m = re.search(r"FAILED: [^:]*: (.*) \([\d.]+ s\)", out)
    if code == 3 and not m:
        f = re.search(r"FORBIDDEN: (.*)", out)
        return ["hang: " + (f.group(1)[:80] if f else "watchdog")]
    if code != 0 and m:
        hung = set(re.findall(r"FORBIDDEN: hang: ([A-Z]\d+) ", out))
        ids = re.findall(r"([A-Z]\d+) \(", m.group(1))
        return [i + (" (hang)" if i in hung else "") for i in ids] or [m.group(1)[:80]]
    if code != 0:
        return [f"conformance exit {code}"]
    return []


def unit_killers(code, out):
    if code == "timeout":
        return ["unit tests hung"]
    if code == 0:
        return []
    failed = re.findall(r"^\[  FAILED  \] ([\w/.]+)", out, re.M)
    failed = sorted(set(f for f in failed if "." in f))
    return failed[:4] + ([f"... {len(failed) - 4} more"] if len(failed) > 4 else []) \
        if failed else [f"unit tests exit {code}"]


def check_snippets(chosen, tree):
    """Every snippet must occur exactly once in `tree`, or the mutant would land elsewhere."""
    bad = []
    for mid, path, find, _, _ in chosen:
        n = open(os.path.join(tree, path)).read().count(find)
        if n != 1:
            bad.append(f"mutate: {mid}: the snippet occurs {n} times in {path}")
    if bad:
        sys.exit("\n".join(bad))
    print(f"mutate: all {len(chosen)} snippets occur exactly once")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--machine", default=os.environ.get("BLITZ_MACHINE", "epyc-2c"))
    ap.add_argument("--jobs", default=str(os.cpu_count() or 2))
    ap.add_argument("--out", default="")
    ap.add_argument("--check", action="store_true",
                    help="only check that every mutant's snippet occurs once in the working tree")
    ap.add_argument("--reparse", action="store_true",
                    help="rebuild the table from build/mutants/mutants.log and the last json")
    args = ap.parse_args()
    if args.reparse:
        return reparse(args)
    only = set(x for x in args.only.split(",") if x)
    chosen = [m for m in CATALOGUE if not only or m[0] in only]
    if args.check:
        return check_snippets(chosen, ROOT)

    work = os.path.join(ROOT, "build", "mutants")
    src, bld = os.path.join(work, "src"), os.path.join(work, "build")
    log = os.path.join(work, "mutants.log")
    os.makedirs(work, exist_ok=True)
    # The committed tree, copied over the previous copy file by file: unchanged files keep
    # their timestamps, so a second run rebuilds only what changed.
    fresh = os.path.join(work, "fresh")
    if os.path.exists(fresh):
        shutil.rmtree(fresh)
    os.makedirs(fresh)
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", fresh], input=archive, check=True)
    sync_tree(fresh, src)
    shutil.rmtree(fresh)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    open(log, "w").close()

    check_snippets(chosen, src)

    subprocess.run(["cmake", "-S", src, "-B", bld, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_CXX_COMPILER=g++",
                    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g0 -DNDEBUG",
                    "-DBLITZ_BUILD_BENCH=OFF"], check=True, stdout=subprocess.DEVNULL)
    build = ["cmake", "--build", bld, "-j", args.jobs, "--target", "blitz", "blitz_unit_tests"]
    # The first hang (20 s without progress) is verdict enough: --max-hangs 1 ends the suite
    # there instead of letting a defect that hangs every checker cost 30 s per run.
    conf = [os.path.join(bld, "blitz"), "conformance", "--quick", "--hang-limit", "20",
            "--max-hangs", "1", "--out", os.path.join(work, "conformance")]
    unit = [os.path.join(bld, "blitz_unit_tests"), "--gtest_brief=1"]

    def suites():
        c = conformance_killers(*run(conf, bld, 300, log))
        # The suite takes about 20 s alone; the guard leaves room for a machine shared with
        # builds (stop 53: 90 s was passed while two sanitizer builds ran, on the unmutated tree).
        u = unit_killers(*run(unit, bld, 300, log))
        return c, u

    print(f"mutate: baseline build of {commit} in {bld}", flush=True)
    code, out = run(build, bld, 3600, log)
    if code != 0:
        sys.exit("mutate: the unmutated tree does not build; see " + log)
    c, u = suites()
    if c or u:
        sys.exit(f"mutate: the unmutated tree fails its suites ({c + u}); see {log}")

    out_dir = args.out or os.path.join(ROOT, "results", args.machine)
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for mid, path, find, replace, what in chosen:
        f = os.path.join(src, path)
        original = open(f).read()
        open(f, "w").write(original.replace(find, replace, 1))
        t0 = time.time()
        code, out = run(build, bld, 3600, log)
        if code != 0:
            c, u = [], []
            verdict = "does not compile"  # a catalogue error, not a kill
        else:
            c, u = suites()
            verdict = "killed" if (c or u) else ("equivalent" if mid in EQUIVALENT else "SURVIVED")
        open(f, "w").write(original)
        row = {"id": mid, "file": path, "defect": what, "verdict": verdict,
               "conformance": c, "unit_tests": u, "seconds": round(time.time() - t0)}
        rows.append(row)
        print(f"mutate: {mid}: {verdict} by {', '.join(c + u) or '-'} ({row['seconds']} s)",
              flush=True)
        write_table(out_dir, args.machine, commit, rows, len(chosen))  # after every mutant
    run(build, bld, 3600, log)  # leave the tree built unmutated
    killed = sum(r["verdict"] == "killed" for r in rows)
    print(f"mutate: {killed}/{len(rows)} killed; table in {out_dir}/mutants.md")
    return 1 if any(r["verdict"] != "killed" and r["verdict"] != "equivalent" for r in rows) else 0


def write_table(out_dir, machine, commit, rows, planned):
    killed = sum(r["verdict"] == "killed" for r in rows)
    survived = [r for r in rows if r["verdict"] == "SURVIVED"]
    with open(os.path.join(out_dir, "mutants.json"), "w") as fh:
        json.dump({"commit": commit, "machine": machine, "planned": planned, "mutants": rows},
                  fh, indent=1)
    with open(os.path.join(out_dir, "mutants.md"), "w") as fh:
        fh.write(f"# Mutation testing ({machine}, commit {commit})\n\n")
        fh.write("`scripts/mutate.py` (`make mutants`): each row is one source defect applied to "
                 "the committed tree, rebuilt, and run through `blitz conformance --quick` and the "
                 "unit tests. Killed by: the checkers that failed (a violation, an uncaught "
                 "control or a hang), then the unit tests that failed.\n\n")
        fh.write(f"{len(rows)} of {planned} mutants run: {killed} killed, {len(survived)} "
                 f"survived, {sum(r['verdict'] == 'equivalent' for r in rows)} equivalent, "
                 f"{sum(r['verdict'] == 'does not compile' for r in rows)} did not compile.\n\n")
        fh.write("| mutant | defect | verdict | checkers | unit tests | s |\n"
                 "|---|---|---|---|---|---|\n")
        for r in rows:
            fh.write(f"| {r['id']} | {r['defect']} (`{r['file']}`) | {r['verdict']} | "
                     f"{'; '.join(r['conformance']) or '-'} | "
                     f"{'; '.join(r['unit_tests']) or '-'} | {r['seconds']} |\n")
        for mid, why in EQUIVALENT.items():
            fh.write(f"\n- {mid} is equivalent: {why}\n")


if __name__ == "__main__":
    sys.exit(main())
