// SPDX-License-Identifier: MIT
#pragma once
// select_scope: lets one task wait on several awaitables (and run several inline tasks) at once,
// so that select, race and timeout decide a winner inside the awaiting task (issue 13, X7).

#include <coroutine>

#include "blitz/detail/context.hpp"

namespace blitz::detail {

class select_scope;

// Something in a branch that must finish before the branch can be dropped (a task_scope whose
// tasks borrow from the branch's frames). settle() starts that (aborts the tasks), arranges a
// wake of the task for when it is done, and says whether it already is.
struct drop_hook {
    bool (*settle)(drop_hook* self) noexcept = nullptr;
    void* ctx = nullptr;
    select_scope* owner = nullptr;
    unsigned slot = 0;
    drop_hook* prev = nullptr;
    drop_hook* next = nullptr;
};

// Where one branch of a scope is suspended right now.
struct scope_slot {
    std::coroutine_handle<> h{};  // resumed when the branch is ready (null: an inner scope sets it)
    ready_hook* hook = nullptr;   // the branch's awaitable and its check (null: ready on any poll)
    bool armed = false;           // the branch has suspended and not been chosen since
};

// The branches of one select, as the task's poll sees them. A task suspended on a select is
// suspended on every branch at once: each branch's awaitable records its readiness check in its
// slot instead of in the task (suspend_current routes it here), and the task's own readiness
// check becomes the scope's, which picks the branch to resume.
//
// 1. enter(): the scope becomes the task's innermost (scopes nest: a branch may itself select).
// 2. For each branch i: set_active(i), then the branch's await_suspend (an awaitable) or its
//    first steps (an inline task); every suspend_current meanwhile lands in slot i.
//    After each branch this scope is made current again (a branch that is itself a select
//    stays installed in its slot but no longer receives suspensions).
// 3. install(): the scope records itself in its parent's active slot, or becomes the task's
//    readiness check when it is the outermost.
// 4. A poll calls ready(): the first slot whose check passes (slots without a check come last,
//    so a branch that yields cannot starve the others) becomes active, its coroutine is the one
//    resumed, and its scope becomes current, so a resumed inline task that suspends again
//    records into the same slot.
// 5. leave() (the select's await_resume, or its destructor on cancellation) makes the parent the
//    innermost scope again, dropping any scope nested below this one (their branches lost).
// 6. Before a decided winner is resumed, every drop_hook registered from a losing branch must
//    settle: until then the scope stays suspended on the winner (the hook wakes the task). This
//    holds also for a branch that wins while the select is being set up (win_during_setup).
//
// Invariants: at most one branch is resumed per poll; a branch never chosen is never resumed;
// the scope lives in the awaiting coroutine's frame (no allocation).
// Thread-safety: the owning task's poll only.
class select_scope : private ready_hook {
public:
    select_scope(scope_slot* slots, unsigned n) noexcept
#if BLITZ_INSPECT
        : ready_hook{&select_scope::ready, &select_scope::describe_branches},
#else
        : ready_hook{&select_scope::ready},
#endif
          slots_(slots),
          n_(n) {
    }
    select_scope(const select_scope&) = delete;
    select_scope& operator=(const select_scope&) = delete;

    // Throws std::logic_error outside a blitz task.
    void enter();
    void leave() noexcept {
        if (t_) leave_entered();  // a select decided in await_ready never entered
    }
    void set_active(unsigned i) noexcept { active_ = i; }
    unsigned active() const noexcept { return active_; }
    void install() noexcept;
    // After a branch registered: a scope it installed below this one stops being current.
    void make_current() noexcept;
    bool entered() const noexcept { return t_ != nullptr; }

    // For suspend_current: the running task suspends on (h, hook) inside this scope.
    void record(std::coroutine_handle<> h, ready_hook* hook) noexcept;

    static bool ready(const ready_hook* self) noexcept;

    // For the task dump (issue 46): the scope behind a task's readiness hook, if it is one;
    // the coroutine its first waiting branch is suspended in (an inner scope's, for a branch
    // that selects); and its description: "select", with each waiting branch's own, the
    // earliest deadline among them, and the first branch's object.
    static const select_scope* of(const ready_hook* h) noexcept {
        return h && h->ready_check == &select_scope::ready ? static_cast<const select_scope*>(h)
                                                           : nullptr;
    }
    std::coroutine_handle<> suspended_in() const noexcept;
    static void describe_branches(const ready_hook* self, wait_point& out);

    // Branch i completed while the select was being set up (it did not suspend). True when
    // every losing branch's drop hook has settled, so the select may return at once; otherwise
    // the scope holds i as the decided winner, to be resumed through `c` (the awaiting
    // coroutine) once the hooks have settled, and the caller must install() and suspend.
    bool win_during_setup(unsigned i, std::coroutine_handle<> c) noexcept;

    // Registers `h` for the active slot of this scope and of every scope around it (the task's
    // poll only). remove_hooks unlinks them.
    static unsigned add_hooks(task_header* t, drop_hook* hooks, unsigned max) noexcept;
    static void remove_hooks(drop_hook* hooks, unsigned n) noexcept;

private:
    void leave_entered() noexcept;
    bool losers_settled(unsigned winner) noexcept;
    bool resume_slot(unsigned i) noexcept;
    task_header* t_ = nullptr;
    select_scope* parent_ = nullptr;
    select_scope* root_ = this;
    unsigned depth_ = 0;
    scope_slot* slots_;
    unsigned n_;
    unsigned active_ = 0;
    int decided_ = -1;  // a winner waiting for its losers' hooks to settle
    drop_hook* hooks_ = nullptr;
};

}  // namespace blitz::detail
