// SPDX-License-Identifier: MIT
#pragma once
// The untyped core of blitz::join_set and blitz::join_map: the set's entries, the list of those
// whose tasks finished, and the waker of the task waiting in join_next.

#include <coroutine>
#include <cstdint>
#include <memory>
#include <vector>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/waker.hpp"

namespace blitz {
struct wait_point;
template <class T>
class join_handle;
}  // namespace blitz

namespace blitz::detail {

class task_header;
class join_set_core;

// What join_set reads out of a join handle it owns (join_handle's take is private).
struct join_handle_access {
    template <class T>
    static T take(join_handle<T>& h) {
        return h.take();
    }
};

// One task of a set, as the core sees it (join_entry<T, K> adds the handle and the key).
//
// 1. The set allocates it after the spawn with two references: the set's, and the join waker's
//    it then registers on the task (join_set_core::adopt).
// 2. The task's completion wakes that waker (on whichever thread completes it): the entry moves
//    from the running list to the ready list, and the task waiting in join_next is woken.
// 3. join_next takes it off the ready list, reads the outcome and drops the set's reference;
//    release_one / release_all (detach, drop, a replaced key) withdraw the waker when they still
//    can and drop it too. The last reference deletes the entry (and with it the join handle).
//
// Invariants: an entry is on at most one of the two lists; `where` says which (gone: on
// neither, and nothing will put it back); it is deleted exactly once.
// Memory ordering: refs is an RMW counter; the final decrement is acq_rel so that the deleting
// thread sees every other holder's writes.
// Thread-safety: prev, next and where under the core's mutex; the rest is the set's.
struct join_entry_base {
    explicit join_entry_base(std::shared_ptr<join_set_core> c) noexcept : core(std::move(c)) {}
    join_entry_base(const join_entry_base&) = delete;
    join_entry_base& operator=(const join_entry_base&) = delete;
    virtual ~join_entry_base() = default;

    void unref() noexcept {
        // acq_rel: the last holder sees the others' writes before it deletes
        if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    // Drops one reference when it goes out of scope.
    struct unref_holder {
        join_entry_base* e;
        ~unref_holder() { e->unref(); }
    };
    // The join waker's: schedules nothing, moves the entry to the ready list.
    waker make_waker() noexcept { return waker(this, &vtable); }
    static const waker_vtable vtable;

    enum class place : std::uint8_t { running, ready, gone };

    std::shared_ptr<join_set_core> core;
    task_header* task = nullptr;  // the task (its handle, in the derived entry, holds it)
    atomic<std::uint32_t> refs{2};
    join_entry_base* prev = nullptr;
    join_entry_base* next = nullptr;
    place where = place::running;
};

// The entries of one set, and its waiter (protocol: join_entry_base).
//
// Invariants: count() == running + ready entries; a ready entry stays until the owner takes it
// (pop_ready), so nothing the owner has not resumed with is ever taken (X8).
// Thread-safety: completed() from any thread; the rest from the set's owner.
class join_set_core {
public:
    join_set_core() = default;
    join_set_core(const join_set_core&) = delete;
    join_set_core& operator=(const join_set_core&) = delete;
    ~join_set_core() = default;

    // Puts a spawned task's entry (its task set) on the running list and registers its join
    // waker; an entry whose task already finished goes straight to the ready list.
    join_entry_base* adopt(join_entry_base* e) noexcept;
    // The task of `e` finished (its join waker was woken).
    void completed(join_entry_base* e) noexcept;
    // The first ready entry, off the lists (the caller owns the set's reference), or nullptr.
    join_entry_base* pop_ready() noexcept;
    // Takes `e` out of the set at once: withdraws its waker, aborts its task if asked, drops the
    // set's reference. Its outcome is never returned.
    void release_one(join_entry_base* e, bool abort) noexcept;
    // release_one for every entry (detach_all; the set's destruction).
    void release_all(bool abort) noexcept;
    void abort_all() noexcept;
    std::size_t size() const noexcept;

    // For join_next's awaiter: true when it may resume now (an entry is ready, or the set is
    // empty). With `t`, registers t's waker when it may not (X8's control can take an entry
    // then, into `*handed`).
    bool may_resume(task_header* t, join_entry_base** handed) noexcept;
    void withdraw() noexcept;
    void describe(wait_point& out) const;

private:
    // The end of release_one and release_all, for an entry already off the lists.
    static void let_go(join_entry_base* e, bool abort) noexcept;
    void unlink(join_entry_base* e) noexcept BLITZ_REQUIRES(mu_);
    void push_back(join_entry_base*& head, join_entry_base*& tail, join_entry_base* e) noexcept
        BLITZ_REQUIRES(mu_);
    void link_ready(join_entry_base* e) noexcept BLITZ_REQUIRES(mu_);

    mutable mutex mu_;
    join_entry_base* running_head_ BLITZ_GUARDED_BY(mu_) = nullptr;
    join_entry_base* running_tail_ BLITZ_GUARDED_BY(mu_) = nullptr;
    join_entry_base* ready_head_ BLITZ_GUARDED_BY(mu_) = nullptr;
    join_entry_base* ready_tail_ BLITZ_GUARDED_BY(mu_) = nullptr;
    std::size_t count_ BLITZ_GUARDED_BY(mu_) = 0;
    waker waiter_ BLITZ_GUARDED_BY(mu_);
    join_entry_base** handed_ BLITZ_GUARDED_BY(mu_) = nullptr;  // X8's control only
};

// join_next's awaiting half: looks for a ready entry, else registers the task's waker; takes
// the entry only in await_resume (take_ready).
class join_wait : protected ready_hook {
public:
    explicit join_wait(join_set_core& c) noexcept : core_(c) {}
    join_wait(const join_wait&) = delete;
    join_wait& operator=(const join_wait&) = delete;
    ~join_wait();

    bool await_ready() noexcept { return core_.may_resume(nullptr, nullptr); }
    bool await_suspend(std::coroutine_handle<> h);

protected:
    join_entry_base* take_ready() noexcept;

private:
    static bool ready(const ready_hook* self) noexcept;
    static void describe(const ready_hook* self, wait_point& out);

    join_set_core& core_;
    bool registered_ = false;
    join_entry_base* handed_ = nullptr;  // X8's control only: taken at the wake
};

#if BLITZ_FAULTS
// X8's negative control: the completion hands the entry to the waiting join_next at once,
// which drops it if it never resumes (a lost select branch, an aborted waiter).
bool fault_join_set_hands_to_waiter() noexcept;
#endif

}  // namespace blitz::detail
