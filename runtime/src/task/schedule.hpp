// SPDX-License-Identifier: MIT
#pragma once
// task_scheduler: what a spawned task needs from whatever runs it (in the spirit of Tokio's
// Schedule trait). task/ defines it; sched/ implements it. A task holds a pointer to this
// interface, never to the scheduler, so task/ depends on nothing above it.

namespace blitz::detail {

class task_header;

// Every method from any thread, and noexcept: these run on wake paths and during completion.
class task_scheduler {
public:
    // A task fresh from task_header::init_spawned (SCHEDULED, holding its handle, list and queue
    // references): record it in its owner's list and queue it.
    virtual void spawn(task_header* t) noexcept = 0;
    // A queue entry was created for `t` (a wake, a cancellation, a yield): place it.
    virtual void schedule(task_header* t, bool is_yield) noexcept = 0;
    // `t` completed on the calling thread. Takes it out of its owner's task list if that list
    // belongs to this thread (mine: the list's reference is now the caller's); elsewhere: it is
    // listed by another thread's worker (see hand_back); unlisted: in no list.
    enum class released { mine, elsewhere, unlisted };
    virtual released release(task_header* t) noexcept = 0;
    // `t` completed on a thread other than its list's owner (release returned false while it
    // is listed), and the RMW that published the completion is done: give it back to the owner,
    // who takes it out of its list and drops the list's reference. The caller does not touch
    // `t` afterwards.
    virtual void hand_back(task_header* t) noexcept = 0;
    // An exception ended `t` and nobody awaits its result (config::on_unhandled_exception).
    virtual void unhandled_exception(task_header* t) noexcept = 0;

protected:
    ~task_scheduler() = default;
};

}  // namespace blitz::detail
