// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::runtime_dump: every live task of a running runtime, with what each one waits on
// (runtime::dump; issue 46, docs/guide/debugging.md).

#include <chrono>
#include <cstdint>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace blitz {

// The leaf of a suspended task's await chain: the blitz awaitable it is suspended in, as that
// awaitable describes itself when the dump asks. Fields that do not apply keep their defaults.
struct wait_point {
    // What it waits for: "sleep", "channel recv", "mutex lock", "read", "join", ...; empty when
    // the awaitable does not describe itself.
    std::string kind;
    // The primitive waited on (a channel's, mutex's or semaphore's shared state), for telling
    // which tasks wait on the same one; nullptr when there is none.
    const void* object = nullptr;
    // A timer's deadline on the runtime's clock (sleep; an I/O operation's deadline); the
    // epoch (zero) when there is none.
    std::chrono::steady_clock::time_point deadline{};
    int fd = -1;             // a socket, pipe or file operation's descriptor
    std::uint64_t task = 0;  // a join's target (its blitz::task_id)
    std::string detail;      // anything else the awaitable adds ("3 senders", "2 branches")
    // For the lost-task analysis (runtime::find_lost): true when this wait can end only
    // through what the two lists name, so that the analysis may reason about it (false: a
    // timer, I/O, a plain thread or anything else may end it, and the task is never reported).
    // ended_by_tasks: the tasks whose completion would end it (a join's target).
    // ended_by_handles: where the handles live whose use would end it (a channel's senders, a
    // mutex's guard), each of which must be found inside some task's frames. Both empty with
    // `provable`: it never ends (a sleep until instant::max()).
    bool provable = false;
    std::vector<std::uint64_t> ended_by_tasks;
    std::vector<const void*> ended_by_handles;
};

// One live task.
struct task_snapshot {
    std::uint64_t id = 0;  // blitz::task_id
    // queued: woken (or spawned) and waiting for a worker; running: in a poll now (`worker`
    // says where, -1 when that worker did not say); waiting: suspended, with its await chain.
    enum class state_kind { queued, running, waiting };
    state_kind state = state_kind::queued;
    int worker = -1;  // running: the worker polling it; otherwise the worker whose list holds it
    std::source_location spawn_site{};
    bool spawn_site_known = false;
    // Since the task first suspended (a task joins its worker's list then; a task that has
    // never suspended is not listed: see runtime_dump::queued_in_run_queues).
    std::chrono::milliseconds age{0};
    std::uint64_t polls = 0;  // polls so far (32 bits kept: wraps after 4 billion)
    // Waiting tasks only: the coroutines it is suspended in, outermost (the spawned one) first,
    // each named by its function; and the awaitable at the bottom. A frame the dump cannot
    // follow (a coroutine of another library) ends the chain with "?".
    std::vector<std::string> chain;
    wait_point waiting_on;
    // Waiting tasks only: the memory of each of its frames that is its own allocation (address,
    // bytes), outermost first. The lost-task analysis finds handles (senders, guards) there.
    std::vector<std::pair<const void*, std::size_t>> frame_memory;
};

// What runtime::dump() saw. Each task is consistent in itself (a waiting task's chain is read
// while no worker can poll it); the list as a whole is not one instant (workers answer in turn).
struct runtime_dump {
    std::vector<task_snapshot> tasks;
    // Tasks in the run queues when the dump began (the global queue, every worker's ring and
    // LIFO slot): the queued tasks above, and tasks spawned that have not run yet, which are in
    // no worker's list and so are only counted here.
    std::uint64_t queued_in_run_queues = 0;
    // Workers that did not reach a point between polls within the dump's wait (stalled in a
    // poll, usually: see the stall detector's report); tasks they hold are missing above.
    std::vector<unsigned> workers_not_answering;
    std::chrono::steady_clock::time_point taken_at{};

    // One block of text: a header line, then one entry per task (oldest first) with its chain.
    std::string to_string() const;
    // The same as JSON (one object; the shape is documented in docs/guide/debugging.md).
    std::string to_json() const;
};

// A task that can never be woken, and the proof (runtime::find_lost).
struct lost_task {
    task_snapshot task;
    // The lost tasks its wait depends on: the task it joins, or the tasks whose frames hold
    // every handle that could end its wait (a channel's senders, a mutex's guard). Empty for a
    // wait that never ends by itself (a sleep until instant::max()).
    std::vector<std::uint64_t> waits_for;
    bool deadlocked = false;  // on a cycle of such dependencies (itself included)
    std::string why;          // the proof in words
};

// What runtime::find_lost found: only what is proven (see find_lost).
struct lost_report {
    std::vector<lost_task> lost;
    std::string to_string() const;
};

// The analysis behind runtime::find_lost, on two dumps taken one after the other: a task is
// lost when it waited in both on a wait that only the things its wait_point names can end
// (provable), had not been polled in between, and every one of those things is itself stuck:
// the tasks it joins are lost, and every handle that could end its wait lives in the frames of
// lost tasks (itself included). Between the dumps there was an instant when all of them were
// suspended as recorded; from then on none of them can run, so none of them can end another's
// wait. Anything the dumps cannot see (a queued or running task, a handle on the heap or in a
// plain thread, a timer, I/O) counts as able to end a wait: false positives are ruled out, at
// the price of misses. An abort from outside (a join handle's abort) still ends a lost task.
lost_report find_lost(const runtime_dump& first, const runtime_dump& second);

}  // namespace blitz
