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
    // references): queue it. It is listed only if a poll leaves it suspended (list); until then
    // the list reference is reserved, and whoever completes it drops that too.
    virtual void spawn(task_header* t) noexcept = 0;
    // A poll on the calling thread left `t` suspended and it is in no list yet: record it in
    // this thread's list (K3), with the reference spawn reserved for that. Called while the
    // caller still runs `t` (before the poll publishes IDLE), so nobody else can poll, complete
    // or hand back `t` meanwhile. A task that completes in its first poll is never listed.
    virtual void list(task_header* t) noexcept = 0;
    // A queue entry was created for `t` (a wake, a cancellation, a yield): place it.
    virtual void schedule(task_header* t, bool is_yield) noexcept = 0;
    // `t` completed on the calling thread. Takes it out of its owner's task list if that list
    // belongs to this thread, or finds it was never listed (mine: the list's reference is now
    // the caller's); elsewhere: it is listed by another thread's worker (see hand_back);
    // unlisted: in no list, and the scheduler keeps the list's reference (the model harnesses,
    // which hold every task until they are destroyed).
    enum class released { mine, elsewhere, unlisted };
    virtual released release(task_header* t) noexcept = 0;
    // `t` completed on a thread other than its list's owner (release returned false while it
    // is listed), and the RMW that published the completion is done: give it back to the owner,
    // who takes it out of its list and drops the list's reference. The caller does not touch
    // `t` afterwards.
    virtual void hand_back(task_header* t) noexcept = 0;
    // An exception ended `t` and nobody awaits its result (config::on_unhandled_exception).
    virtual void unhandled_exception(task_header* t) noexcept = 0;
    // A plain thread is about to block until `t` completes (join, block_on). A scheduler with no
    // threads of its own (the current-thread runtime) runs its tasks on the caller until `t`
    // completes, and returns true; the others return false and the caller waits.
    virtual bool run_until_complete(task_header* /*t*/) noexcept { return false; }

    // Whether release() answers `mine` for every task in no list (the runtime's scheduler:
    // the reserved list reference is the completer's), so a completion may skip the call for
    // such a task (task_header::complete_unshared). False where the scheduler keeps it
    // (unlisted: the model harnesses).
    bool unlisted_are_mine() const noexcept { return unlisted_are_mine_; }
    // Whether this is the runtime's scheduler (sched::scheduler), whose spawn a spawn calls
    // directly instead of through the vtable (submit_spawn, sched/scheduler.cpp).
    bool is_runtime_scheduler() const noexcept { return is_runtime_scheduler_; }

protected:
    explicit task_scheduler(bool unlisted_are_mine = false,
                            bool is_runtime_scheduler = false) noexcept
        : unlisted_are_mine_(unlisted_are_mine), is_runtime_scheduler_(is_runtime_scheduler) {}
    ~task_scheduler() = default;

private:
    bool unlisted_are_mine_;
    bool is_runtime_scheduler_;
};

}  // namespace blitz::detail
