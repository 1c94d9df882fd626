// SPDX-License-Identifier: MIT
#pragma once
// task_header: the type-erased, scheduler-visible part of a spawned task.

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <source_location>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/inspect.hpp"
#include "blitz/detail/task_state.hpp"
#include "blitz/waker.hpp"

namespace blitz::detail {

class task_scheduler;
class task_list;
class select_scope;

// The spawn site a task header's index names (task/site_table.hpp); empty for 0. Lock-free and
// async-signal-safe.
std::source_location spawn_site_at(std::uint16_t index) noexcept;

// The header of a spawned task. It sits in front of the coroutine frame in the same allocation
// (task<T>::promise_type::operator new places it there), so a spawn costs one allocation.
//
// State machine (lifecycle in state_, K2):
//   1. spawn: SCHEDULED with 3 references (join handle, a task list's, queue entry). The list's
//      is reserved: the task joins the polling worker's list when a poll first leaves it
//      suspended, and one that completes before that drops it at completion.
//   2. a worker takes it: SCHEDULED -> RUNNING (clears `notified`).
//   3. after a poll that suspended: RUNNING -> IDLE, or RUNNING -> SCHEDULED when `notified` was
//      set or cancellation is due (the queue reference is then kept for the new entry).
//   4. wake: IDLE -> SCHEDULED with +1 reference for the new queue entry; RUNNING/SCHEDULED only
//      set `notified`; COMPLETE ignores wakes.
//   5. completion or cancellation: -> COMPLETE; the join waker, if registered, is woken; the
//      queue reference is released; the task list's goes at once on its owner's thread, or,
//      when it completed elsewhere, when the owner takes it from its completion inbox.
//   6. the last reference frees the allocation, destroying the frame first if still alive.
//   A task that ends in its first poll with no handle, waker or list holding it skips 5 and 6's
//   RMWs: its runner holds every reference left, so it frees the block without publishing
//   COMPLETE (complete_unshared).
//
// Invariants: at most one queue entry exists per task (only the IDLE -> SCHEDULED edge creates
// one); refs never underflow; the frame is destroyed exactly once; memory is freed exactly once.
// Memory ordering: every transition is a CAS (acq_rel) on state_, so whoever observes a lifecycle
// value also observes the writes made before it (frame contents, result, join_waker_).
// Thread-safety: state_ from any thread; resume_point_ and the frame only by the thread that
// moved the task to RUNNING; join_waker_ by the join side until the join_waker bit is published,
// then by the completer.
class task_header {
public:
    task_header() noexcept : void_error_() {}
    ~task_header() {
        if (!has(flag_in_front)) void_error_.~exception_ptr();
    }
    task_header(const task_header&) = delete;
    task_header& operator=(const task_header&) = delete;

    // ---- set by spawn (before the task is published) ----
    // `site`: the spawn site's index in the table of sites (spawn_site_index; 0: none).
    void init_spawned(task_scheduler* s, std::coroutine_handle<> root,
                      [[maybe_unused]] std::uint16_t site = 0) noexcept {
        sched_ = s;
        resume_point_ = root;
#if BLITZ_INSPECT
        // relaxed: published with the task; the id is not taken before the spawn
        id_site_.store(std::uint64_t{site} << site_shift, std::memory_order_relaxed);
#endif
        flags_ |= flag_spawned;
        // join handle + owner's task list + queue entry
        // relaxed: the task is published later by a queue push (lock or release store)
        state_.store(3 * state::ref_one | state::join_interest |
                         state::lifecycle_bits(state::lifecycle::scheduled),
                     std::memory_order_relaxed);
    }

    // ---- one poll, for the worker that took the task from a queue (states 2 and 3) ----
    enum class poll_outcome { completed, idle, rescheduled };
    // Moves the task to RUNNING, then completes it as cancelled if cancellation is due (K4; with
    // `fault_ignore_shield`, K4's negative control, whenever it was requested); otherwise resumes
    // it with a fresh cooperative budget of `coop_budget` awaits (B2, -1: none), unless the
    // awaitable it waits on says the wake was stray (`stray` is then set and it stays
    // suspended). A finished coroutine is completed; otherwise the task goes IDLE or back to
    // SCHEDULED, and on `rescheduled` the caller owns the queue entry and requeues it.
    poll_outcome poll(int coop_budget, bool fault_ignore_shield, bool& stray) noexcept;

    // ---- the single exit (state 5) ----
    // Destroys the frame, publishes COMPLETE (cancelled or not), wakes the join waiter, reports
    // an exception nobody will see (task_scheduler::unhandled_exception), then drops `refs`
    // references, plus the owner list's when the scheduler releases the task on this thread.
    // Without a join waiter or an exception, publishing COMPLETE drops them in the same RMW.
    void complete(bool cancelled, std::uint32_t refs) noexcept;
    // complete()'s short form for a poll that finished the coroutine, when nobody else can see
    // the task: it is in no list (and its scheduler gives the caller the reserved list
    // reference), no exception escaped it, and the runner's two references (queue entry, list)
    // are all there are. No join handle, waker or abort can then read the state again, so
    // COMPLETE is never published; the frame is destroyed and the block freed at once. False
    // (nothing changed) when complete() must run instead.
    bool complete_unshared() noexcept;
    // Shutdown's form, after the workers stopped: cancels the task if it has not completed
    // (frame, state, join waiter); the caller drops the references it holds.
    void cancel_for_shutdown() noexcept;

    // ---- lifecycle transitions (see the state machine above) ----
    std::uint64_t transition_to_running() noexcept;  // returns the state after the transition
    enum class after_poll { idle, rescheduled };
    // `yielded`: the task asked to go to the back of the queue (mark_yielded), which reschedules
    // it as `notified` does.
    after_poll transition_after_poll(bool yielded = false) noexcept;
    // Returns the previous state. `drop` references go in the same step unless the previous
    // state has a join waker (the caller then still holds them).
    std::uint64_t transition_to_complete(bool was_cancelled, std::uint32_t drop = 0) noexcept;

    // Wake protocol (K2): returns true iff the caller created a queue entry and must enqueue.
    // `consume` says the caller's reference (a waker's) is handed over or dropped.
    // `fault_enqueue_running` is K2's negative control (checkers only): a wake of a RUNNING task
    // asks for a second queue entry instead of setting NOTIFIED.
    bool transition_to_scheduled(bool consume, bool fault_enqueue_running = false) noexcept;

    // The task dump (issue 46): takes an IDLE task as a worker takes a queued one (IDLE ->
    // RUNNING, with a reference that stands in for a queue entry), so that nobody polls it,
    // completes it or destroys its frame while the dump reads its await chain; false (nothing
    // changed) unless it was IDLE. Wakes meanwhile only set `notified`, and a cancellation only
    // `cancelled`; release it with transition_after_poll(), which reschedules it for either
    // (the caller then owns the queue entry and must schedule it).
    bool try_claim_idle() noexcept;

    // Cancellation (K4): sets `cancelled`; returns true if the task was IDLE and the caller must
    // enqueue it (a queue reference was taken).
    bool request_cancel() noexcept;
    // False (and nothing changed) when the shield depth is at its maximum (255).
    [[nodiscard]] bool shield_push() noexcept;
    void shield_pop() noexcept;

    // ---- join side (K5) ----
    // Stores `w` and publishes it; false if the task is already complete (w is left unused).
    bool set_join_waker(waker w) noexcept;
    // Withdraws a registered join waker; false if the completer already owns it.
    bool unset_join_waker() noexcept;
    // The join handle detaches: sets `detached`, clears its join interest and drops its
    // reference, in one RMW (the handle holds the interest and has not detached, so the bits'
    // values are known and the change is a single subtraction).
    void detach_handle() noexcept;

    // ---- references ----
    void ref() noexcept;
    void unref(std::uint32_t n = 1) noexcept;
    // The join handle lets go: its reference, and its join interest unless it detached first.
    void drop_handle(bool interested) noexcept;

    // Who the task is, for the stall detector and the dump (issue 46): an id unique in the
    // process (never 0, never reused among the first 2^48) and where it was spawned (set before
    // the task is published; an empty location when the spawn came through an internal path
    // without one, or after 65,535 other sites: the table of sites is full).
    // The id is taken when first asked for (a spawn pays nothing for it), by whoever asks
    // first: from the asking thread's block of ids (taken 4,096 at a time from one process-wide
    // counter), or, in a signal handler, which may interrupt that thread's own take, straight
    // from the counter (id_in_signal_handler: two lock-free RMWs).
    // With inspection compiled out (BLITZ_INSPECT=0, the benchmark's reference build only) the
    // header keeps neither: the id is the header's address (reused once the task is gone) and
    // every spawn site is empty.
#if BLITZ_INSPECT
    std::uint64_t id() const noexcept {
        // relaxed: a name, not data
        const std::uint64_t v = id_site_.load(std::memory_order_relaxed) & id_mask;
        return v != 0 ? v : assign_id(/*in_signal_handler=*/false);
    }
    std::uint64_t id_in_signal_handler() const noexcept {
        const std::uint64_t v = id_site_.load(std::memory_order_relaxed) & id_mask;
        return v != 0 ? v : assign_id(/*in_signal_handler=*/true);
    }
    std::source_location spawn_site() const noexcept {
        return spawn_site_at(
            static_cast<std::uint16_t>(id_site_.load(std::memory_order_relaxed) >> site_shift));
    }
#else
    std::uint64_t id() const noexcept { return reinterpret_cast<std::uintptr_t>(this); }
    std::uint64_t id_in_signal_handler() const noexcept { return id(); }
    std::source_location spawn_site() const noexcept { return {}; }
#endif

    std::uint64_t load_state(std::memory_order mo = std::memory_order_acquire) const noexcept {
        return state_.load(mo);
    }
    bool is_complete() const noexcept {
        return state::lifecycle_of(load_state()) == state::lifecycle::complete;
    }
    bool is_cancelled_result() const noexcept { return (load_state() & state::cancelled) != 0; }

    // Waker that schedules this task; takes one reference.
    waker make_waker() noexcept;

    // Runs the frame's destructors now (cancellation); the memory stays until the last unref.
    void destroy_frame() noexcept;

    // Wakes the join waker after completion, if one was registered before completion.
    void wake_join_waiter(std::uint64_t prev_state) noexcept;

    // ---- for task<T> and join_handle<T>: where the result is kept ----
    // A result other than void's lives in a slot in front of the header: how big it is, how to
    // destroy it and how to read the exception it may hold, in one static table per result type.
    struct result_ops {
        std::size_t slot_bytes;  // a multiple of the default new alignment
        void (*destroy)(void* slot) noexcept;
        std::exception_ptr (*error_of)(void* slot) noexcept;
    };
    // The result slot: in front of the header (a non-void task), or the header's own exception
    // slot (task<void>: a std::exception_ptr).
    void* result_slot() const noexcept {
        auto* self = const_cast<task_header*>(this);
        if (has(flag_in_front)) return reinterpret_cast<std::byte*>(self) - result_ops_->slot_bytes;
        return &self->void_error_;
    }
    // Records that the slot in front of the header was constructed (non-void results).
    void mark_slot_built() noexcept { flags_ |= flag_slot_built; }
    // The exception stored in the result slot, if any (for unhandled-exception reports).
    std::exception_ptr stored_exception() const noexcept {
        if (!has(flag_in_front)) return void_error_;
        return has(flag_slot_built) ? result_ops_->error_of(result_slot()) : nullptr;
    }
    // An exception escaped the coroutine (set by its promise).
    void mark_failed() noexcept { flags_ |= flag_failed; }
    // Whoever runs the task (set by init_spawned).
    task_scheduler* scheduler() const noexcept { return sched_; }
    // blitz::unconstrained (B2): turns the budget off for this task's polls, or back on; returns
    // the previous setting. Only the running task calls it (the bit is the frame owner's).
    bool set_unconstrained(bool on) noexcept {
        const bool was = has(flag_unconstrained);
        flags_ = on ? (flags_ | flag_unconstrained)
                    : static_cast<std::uint8_t>(flags_ & ~flag_unconstrained);
        return was;
    }

private:
    // The library's own parts that link, queue and suspend tasks; and task_access, through
    // which unit tests and the conformance suite build inert headers. Nothing else reaches the
    // fields below.
    friend class global_queue;
    friend class local_queue;
    friend class task_list;
    friend class select_scope;
    friend struct task_access;
    friend struct dump_access;  // the task dump (sched/task_dump.cpp) reads a claimed task
    friend task_header* suspend_current(std::coroutine_handle<> h, ready_fn ready, ready_hook* hook,
                                        describe_fn describe);
    friend void* allocate_task_frame(std::size_t frame_size, const result_ops* front);
    friend void free_task_frame(void* frame) noexcept;
    // Destroys the result slot and the header and gives the block back (the last reference).
    static void release_block(task_header* h) noexcept;

    // ---- fields (96 bytes: the header and an empty frame fill a 144-byte block; 80 and 128
    // with inspection compiled out) ----
    detail::atomic<std::uint64_t> state_{0};
    task_scheduler* sched_ = nullptr;         // whoever runs it (task/schedule.hpp)
    std::coroutine_handle<> resume_point_{};  // innermost coroutine to resume next poll
    ready_hook* ready_ = nullptr;             // the awaitable suspended on, if it has a check
    select_scope* scope_ = nullptr;           // innermost select the task is inside (poll only)
    detail::atomic<task_header*> queue_next_{nullptr};  // intrusive link for the global queue
    waker join_waker_{};
    // The task's result lives outside the frame, so the frame (its locals and by-value
    // parameters, e.g. a channel sender) is destroyed as soon as the task completes while the
    // join handle can still take the result: a task<void>'s (an exception or nothing) in the
    // header itself, any other result in a slot in front of the header, described by a static
    // table per result type.
    union {
        const result_ops* result_ops_;   // result_in_front: the slot's table (set at allocation)
        std::exception_ptr void_error_;  // otherwise: a task<void>'s exception, if any
    };
    // Where the owner's task_list keeps it: its position, and the list's id (0: in no list).
    // Written by the list's owner only; the id is atomic because a worker completing the task
    // compares it with its own list's (relaxed: an id that is not the reader's own means "not
    // mine" whatever it is).
    std::uint32_t reg_index_ = 0;
    detail::atomic<std::uint16_t> reg_owner_{0};
    // The block's size class (block_cache; block_cache::classes: from the heap), at allocation.
    std::uint8_t size_class_ = 0;
    std::uint8_t flags_ = 0;  // the bits below; written only by whoever owns the frame
#if BLITZ_INSPECT
    // See id() (the low 48 bits; 0: not asked for yet) and spawn_site() (the top 16 bits: an
    // index in the table of sites, set by init_spawned).
    static constexpr int site_shift = 48;
    static constexpr std::uint64_t id_mask = (std::uint64_t{1} << site_shift) - 1;
    mutable detail::atomic<std::uint64_t> id_site_{0};
    // For the dump: polls so far (written by the poller, read by a dump with a relaxed load),
    // and the millisecond, on the process's cycle_clock (wrapping at 2^32), at which the task
    // first suspended (written when it is listed, before IDLE is published).
    detail::atomic<std::uint32_t> polls_{0};
    std::uint32_t listed_ms_ = 0;
#endif
    // The bytes from the frame's start to its block's end (the block's size from its class,
    // or the heap's usable size): the dump's lost-task analysis finds the handles (senders,
    // guards) that live inside a task's frames by address.
    std::size_t frame_capacity() const noexcept;
    std::uint64_t assign_id(bool in_signal_handler) const noexcept;
    static constexpr std::uint8_t flag_spawned = 1;     // handed to a scheduler
    static constexpr std::uint8_t flag_frame_dead = 2;  // the frame was destroyed
    static constexpr std::uint8_t flag_failed = 4;      // an exception escaped the coroutine
    static constexpr std::uint8_t flag_in_front = 8;    // the result slot is in front (result_ops_)
    static constexpr std::uint8_t flag_slot_built = 16;  // ... and was constructed
    // Not a task: the header that links a task_batch into the global queue (global_queue.hpp).
    static constexpr std::uint8_t flag_queue_batch = 32;
    // Inside blitz::unconstrained: every poll starts with the cooperative budget off (B2). The
    // top bit, so that the poll turns it into -1 or 0 with one sign extension.
    static constexpr std::uint8_t flag_unconstrained = 128;
    bool has(std::uint8_t f) const noexcept { return (flags_ & f) != 0; }

    // The spawned coroutine (the frame's owner): its frame follows the header in the block.
    std::coroutine_handle<> root() const noexcept;
    // Destroys the frame, publishes COMPLETE and wakes the join waiter; returns the state before.
    std::uint64_t finish(bool cancelled) noexcept;
    // Subtracts `dec` from the state (n references and any flag bits with them); the holder of
    // the last reference destroys the frame if it is alive and frees the block.
    void drop_refs(std::uint64_t dec, std::uint32_t n) noexcept;
};

// Cancels `t` on this thread if it is idle (it is not queued or running anywhere, so nobody
// else will); otherwise requests cancellation as abort() does. Returns at once either way.
void cancel_here_if_idle(task_header* t) noexcept;

// `bytes` rounded up to the default new alignment (that of task frames and result slots).
constexpr std::size_t new_aligned(std::size_t bytes) noexcept {
    constexpr std::size_t a = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    return (bytes + a - 1) / a * a;
}

// Bytes placed in front of every task<T> frame for its header, rounded to the frame alignment.
inline constexpr std::size_t header_prefix_size = new_aligned(sizeof(task_header));

inline task_header* header_of_frame(void* frame) noexcept {
    return reinterpret_cast<task_header*>(static_cast<std::byte*>(frame) - header_prefix_size);
}

inline std::coroutine_handle<> task_header::root() const noexcept {
    // A coroutine's handle is the address its allocation function returned (both compilers),
    // so a spawned task's root is the frame right after its header. (Unit tests that drive
    // inert headers never poll or destroy them, so their root is never read.)
    return std::coroutine_handle<>::from_address(
        const_cast<std::byte*>(reinterpret_cast<const std::byte*>(this)) + header_prefix_size);
}

// A block of at least `bytes` from this thread's cache of freed blocks (the one task frames
// use), or the heap; give it back with cached_free and the same size, from any thread.
void* cached_alloc(std::size_t bytes);
void cached_free(void* p, std::size_t bytes) noexcept;

// Frame allocation hooks used by task<T>::promise_type: [result slot | header | frame] in one
// block; `front` describes the result slot in front of the header (nullptr: task<void>, whose
// exception slot is in the header).
void* allocate_task_frame(std::size_t frame_size, const task_header::result_ops* front = nullptr);
void free_task_frame(void* frame) noexcept;
// The header of the latest allocate_task_frame on this thread, until its promise claims it
// (nullptr: claimed, or none yet).
extern constinit thread_local task_header* tl_fresh_header;

// That header, if `frame` (the address of the coroutine frame whose promise is being built) is
// the frame allocated with it; nullptr when the compiler elided the allocation (the frame lies
// elsewhere): such a task is only ever awaited inline.
// `none` (nullptr by default) when it was not.
inline task_header* claim_fresh_header(const void* frame, task_header* none = nullptr) noexcept {
    task_header* h = tl_fresh_header;
    // As integers: no pointer arithmetic on a null header.
    if (reinterpret_cast<std::uintptr_t>(h) + header_prefix_size !=
        reinterpret_cast<std::uintptr_t>(frame))
        return none;
    tl_fresh_header = nullptr;
    return h;
}

}  // namespace blitz::detail
