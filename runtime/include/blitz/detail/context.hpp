// SPDX-License-Identifier: MIT
#pragma once
// Thread-local runtime context: which runtime the calling thread serves and which task it runs.

#include <cassert>
#include <coroutine>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/detail/inspect.hpp"

namespace blitz {
struct config;
struct wait_point;
}  // namespace blitz

namespace blitz::detail {

class task_header;
class task_scheduler;
class timer_driver;
class blocking_pool;
class io_driver;

// What a thread serving a runtime can reach without going through a worker: its scheduler
// (through the task/ interface), its timer driver, its I/O driver (null with io_backend =
// none), its blocking pool and its configuration.
// rt/ builds one per runtime and installs it on every worker thread; each subsystem reads
// only its own field, so none of them depends on rt/ or on the others.
struct runtime_context {
    task_scheduler* sched = nullptr;
    timer_driver* timers = nullptr;
    io_driver* io = nullptr;
    blocking_pool* blocking = nullptr;
    const config* cfg = nullptr;
};

// The calling thread's context, written by the runtime (task/context_internal.hpp) and read
// through the functions below. Inline, as every spawn and every poll reads or writes them.
// tl_task is published for the stall detector (issue 46), which reads another worker's with a
// relaxed load to tell a poll from an idle wait: an atomic whose relaxed stores compile to the
// plain moves they were. (The model checker's build, which runs no detector, keeps it plain.)
#if defined(BLITZ_MODEL_ATOMIC_HEADER)
inline thread_local task_header* tl_task = nullptr;
inline task_header* load_task_slot(task_header* const& slot) noexcept { return slot; }
inline void store_task_slot(task_header*& slot, task_header* t) noexcept { slot = t; }
#else
inline thread_local atomic<task_header*> tl_task{nullptr};
inline task_header* load_task_slot(const detail::atomic<task_header*>& slot) noexcept {
    return slot.load(std::memory_order_relaxed);
}
inline void store_task_slot(detail::atomic<task_header*>& slot, task_header* t) noexcept {
    slot.store(t, std::memory_order_relaxed);
}
#endif
inline thread_local const runtime_context* tl_runtime = nullptr;
inline thread_local const runtime_context* tl_draining = nullptr;

// The task whose poll is running on this thread, or nullptr.
inline task_header* current_task() noexcept { return load_task_slot(tl_task); }
// The runtime whose worker this thread is, or nullptr on a plain thread.
inline const runtime_context* current_runtime() noexcept { return tl_runtime; }
// current_runtime(), or else the runtime whose shutdown is destroying task frames on this thread
// (a destructor that spawns reaches it and gets a cancelled handle), or nullptr.
inline const runtime_context* current_or_draining_runtime() noexcept {
    return tl_runtime ? tl_runtime : tl_draining;
}
#if BLITZ_FAULTS
// K5's negative control: true when this worker's runtime drops escaping exceptions on purpose.
bool fault_drop_exceptions() noexcept;
// X7's negative control: true when this worker's runtime lets a select complete its losers.
bool fault_select_completes_losers() noexcept;
// X7's other control: true when a select resumes its winner before its losers have settled.
bool fault_select_skips_loser_settle() noexcept;
#endif

// Readiness check of a suspended awaitable: an awaitable that can tell whether it may be
// resumed derives from ready_hook (it lives in the suspended frame), so the task's header keeps
// one pointer for both the check and its object.
// The same object names what it waits on for the task dump (runtime::dump, issue 46): its
// describe function, stored at suspension with the check, fills a wait_point (blitz/dump.hpp)
// when a dump reads the suspended task; nullptr: the dump shows an awaitable of unknown kind.
struct ready_hook;
using ready_fn = bool (*)(const ready_hook* self) noexcept;
using describe_fn = void (*)(const ready_hook* self, wait_point& out);
struct ready_hook {
    ready_fn ready_check = nullptr;  // set by suspend_current
#if BLITZ_INSPECT
    describe_fn describe = nullptr;  // likewise (not kept with inspection compiled out)
#endif
};

// For awaitables that park the running task: records `h` as the coroutine to resume on the
// next poll and returns the running task. Throws std::logic_error outside a runtime task.
//
// `ready` (optional) makes the awaitable immune to stray wakes: a poll of the task first calls
// ready(hook) and, if it says false, leaves the task idle without resuming it. `hook` is the
// awaitable itself (it derives from ready_hook; `ready` casts it back). A stray wake is one left
// over from an earlier registration, such as the losing side of a timeout race. Awaitables that
// keep a waker registered must either pass `ready` or guarantee that the only wake they can
// receive is their own.
// `describe` (optional, with `ready`) is how the dump names the wait (ready_hook::describe).
task_header* suspend_current(std::coroutine_handle<> h, ready_fn ready = nullptr,
                             ready_hook* hook = nullptr, describe_fn describe = nullptr);

// Cooperative budget (B2): how many more awaits on already-ready resources (a free permit, a
// queued value) the running task may complete in this poll without suspending; -1 means
// unlimited (plain threads, budget disabled). The worker refills it before every poll.
inline thread_local int tl_coop_budget = -1;
inline bool coop_exhausted() noexcept { return tl_coop_budget == 0; }
// Counts one ready completion against the budget.
inline void coop_spend() noexcept {
    if (tl_coop_budget > 0) --tl_coop_budget;
}
// Set by mark_yielded during a poll, read and cleared by the poll when the task suspends.
inline thread_local bool tl_yield_requested = false;
// Puts the running task `t` at the back of its worker's ring when it next suspends (a yield).
// The poll then reschedules it as if it had been woken while running (K2), but nothing is
// written to the state word: only the thread running the task reads this flag.
inline void mark_yielded([[maybe_unused]] task_header* t) noexcept {
    assert(t == current_task() && "mark_yielded: only the running task yields");
    tl_yield_requested = true;
}

}  // namespace blitz::detail
