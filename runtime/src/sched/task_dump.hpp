// SPDX-License-Identifier: MIT
#pragma once
// The task dump (issue 46; blitz/dump.hpp): each worker lists its own tasks at a point between
// polls, and the dumping thread gathers, names and orders what they found.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/dump.hpp"

namespace blitz::detail {

class worker;

// One task as a worker saw it; its frames are still addresses (each frame's resume function),
// named by the dumping thread.
struct task_record {
    task_snapshot snap;
    std::vector<void*> frames;    // innermost first
    bool chain_complete = false;  // the walk reached the spawned coroutine
    std::uint32_t listed_ms = 0;
};

// A dump in progress, shared by the dumping thread and the workers it asks.
//
// Protocol:
//   1. The dumper makes one with `pending` = the workers it asks and a reference for each of
//      them and one for itself, stores it in each worker's slot (worker::ask_dump, a release
//      store) and unparks them.
//   2. A worker at the start of a tick takes it from its slot (exchange, acquire), lists its
//      tasks (worker::answer_dump), appends them under the mutex, counts itself done and
//      drops its reference.
//   3. The dumper waits on `done` until every worker answered or its wait ran out; then, for
//      each worker that has not answered, it takes the request back from the worker's slot:
//      when it gets it, that worker never started (it is stalled in a poll, usually) and the
//      dumper drops its reference for it; when the slot is empty the worker is answering and
//      the dumper waits for it (a worker answers in bounded time once it started).
// Invariants: each asked worker answers at most once and is either counted in `answered` or
// reported as not answering; the request is freed by whoever drops the last reference.
// Memory ordering: the slot's release store and the worker's acquire exchange order the request's
// set-up before its use; everything else is under the mutex.
// Thread-safety: the fields below the mutex only under it.
class dump_request {
public:
    explicit dump_request(unsigned workers) : answered(workers, false), refs_(workers + 1) {}
    void ref_drop() noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }

    std::mutex m;
    std::condition_variable done;
    std::vector<task_record> records;  // under m
    std::vector<bool> answered;        // under m

private:
    atomic<unsigned> refs_;
};

// The reads a dump makes of a task (task_header's fields are private to its friends).
struct dump_access {
    // When a task joins a worker's list (its first suspension): the worker's tick time.
    // Polls so far (the poller's count; 0 with inspection compiled out).
    static std::uint32_t polls([[maybe_unused]] const task_header* t) noexcept {
#if BLITZ_INSPECT
        return t->polls_.load(std::memory_order_relaxed);
#else
        return 0;
#endif
    }
    static void set_listed([[maybe_unused]] task_header* t,
                           [[maybe_unused]] std::uint32_t ms) noexcept {
#if BLITZ_INSPECT
        t->listed_ms_ = ms;
#endif
    }
    // The task as a record; `t` is in the calling worker's own list (so its block stays). An
    // IDLE task is claimed while its chain is read (task_header::try_claim_idle) and then
    // released; returns it when the release rescheduled it (a wake or an abort arrived in the
    // meantime: the caller owns the queue entry and must queue it), else nullptr. False in
    // `keep` for a task that completed and awaits its list's reclaim (not live).
    // `now_ms`: the worker's clock, in the units of set_listed.
    static task_header* record(task_header* t, unsigned worker, std::uint32_t now_ms,
                               task_record& out, bool& keep);

private:
    static void read_chain(task_header* t, task_record& out);
};

// Names the frames of every record and orders them (oldest first): the dumper's part.
void finish_dump(std::vector<task_record>& records, runtime_dump& out);

}  // namespace blitz::detail
