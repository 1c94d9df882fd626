// SPDX-License-Identifier: MIT
#include <utility>

#include "blitz/detail/join_set_core.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/dump.hpp"
#include "blitz/join_handle.hpp"

namespace blitz::detail {

namespace {
join_entry_base* entry_of(void* data) noexcept { return static_cast<join_entry_base*>(data); }
}  // namespace

const waker_vtable join_entry_base::vtable = {
    /*wake=*/[](void* d) {
        join_entry_base* e = entry_of(d);
        e->core->completed(e);
        e->unref();
    },
    /*wake_by_ref=*/[](void* d) { entry_of(d)->core->completed(entry_of(d)); },
    /*clone=*/
    [](void* d) -> void* {
        // relaxed: a new reference from an existing one orders nothing
        entry_of(d)->refs.fetch_add(1, std::memory_order_relaxed);
        return d;
    },
    /*drop=*/[](void* d) { entry_of(d)->unref(); },
};

join_entry_base* join_set_core::adopt(join_entry_base* e) noexcept {
    {
        lock_guard l(mu_);
        push_back(running_head_, running_tail_, e);
        e->where = join_entry_base::place::running;
        ++count_;
    }
    // False when the task already finished: the waker was dropped unused (its reference with it).
    if (!e->task->set_join_waker(e->make_waker())) completed(e);
    return e;
}

void join_set_core::completed(join_entry_base* e) noexcept {
    waker w;
    {
        lock_guard l(mu_);
        if (e->where != join_entry_base::place::running) return;  // released meanwhile
        unlink(e);
        if (BLITZ_FAULT(handed_ && fault_join_set_hands_to_waiter())) {
            *std::exchange(handed_, nullptr) = e;  // the waiter owns the set's reference now
            e->where = join_entry_base::place::gone;
            --count_;
        } else {
            link_ready(e);
        }
        w = std::move(waiter_);
    }
    std::move(w).wake();
}

join_entry_base* join_set_core::pop_ready() noexcept {
    lock_guard l(mu_);
    join_entry_base* e = ready_head_;
    if (!e) return nullptr;
    unlink(e);
    e->where = join_entry_base::place::gone;
    --count_;
    return e;
}

void join_set_core::release_one(join_entry_base* e, bool abort) noexcept {
    {
        lock_guard l(mu_);
        if (e->where != join_entry_base::place::gone) {
            unlink(e);
            e->where = join_entry_base::place::gone;
            --count_;
        }
    }
    let_go(e, abort);
}

void join_set_core::release_all(bool abort) noexcept {
    std::vector<join_entry_base*> all;
    {
        lock_guard l(mu_);
        all.reserve(count_);
        for (join_entry_base* head : {running_head_, ready_head_}) {
            for (join_entry_base* e = head; e; e = e->next) {
                e->where = join_entry_base::place::gone;
                all.push_back(e);
            }
        }
        running_head_ = running_tail_ = ready_head_ = ready_tail_ = nullptr;
        count_ = 0;
    }
    for (join_entry_base* e : all) let_go(e, abort);
}

void join_set_core::let_go(join_entry_base* e, bool abort) noexcept {
    // Outside the lock: a withdrawn waker's drop, and an abort that cancels an idle task here
    // (which completes it and would wake its waker), both reach this core again.
    (void)e->task->unset_join_waker();
    if (abort) abort_task(e->task);
    e->unref();
}

void join_set_core::abort_all() noexcept {
    std::vector<task_header*> running;
    {
        lock_guard l(mu_);
        for (join_entry_base* e = running_head_; e; e = e->next) running.push_back(e->task);
    }
    // Only the owner (the caller) takes entries out of the set, so each task's handle, and with
    // it the task, outlives this loop. Outside the lock: an idle task is cancelled right here.
    for (task_header* t : running) abort_task(t);
}

std::size_t join_set_core::size() const noexcept {
    lock_guard l(mu_);
    return count_;
}

bool join_set_core::may_resume(task_header* t, join_entry_base** handed) noexcept {
    lock_guard l(mu_);
    if (ready_head_ || count_ == 0 || (handed && *handed)) return true;
    if (t) {
        waiter_ = t->make_waker();
        handed_ = handed;
    }
    return false;
}

void join_set_core::withdraw() noexcept {
    waker w;
    {
        lock_guard l(mu_);
        w = std::move(waiter_);
        handed_ = nullptr;
    }
    // The task's reference goes outside the lock.
}

void join_set_core::describe(wait_point& out) const {
    out.kind = "join_set next";
    out.object = this;
    lock_guard l(mu_);
    // Only the completion of a task still running in the set can end it (the owner, which
    // alone adds tasks, is the waiter).
    out.provable = true;
    std::size_t n = 0;
    for (join_entry_base* e = running_head_; e; e = e->next, ++n)
        out.ended_by_tasks.push_back(e->task->id());
    out.detail = std::to_string(n) + " running";
}

void join_set_core::unlink(join_entry_base* e) noexcept {
    auto& head = e->where == join_entry_base::place::ready ? ready_head_ : running_head_;
    auto& tail = e->where == join_entry_base::place::ready ? ready_tail_ : running_tail_;
    (e->prev ? e->prev->next : head) = e->next;
    (e->next ? e->next->prev : tail) = e->prev;
    e->prev = e->next = nullptr;
}

void join_set_core::push_back(join_entry_base*& head, join_entry_base*& tail,
                              join_entry_base* e) noexcept {
    e->prev = tail;
    e->next = nullptr;
    (tail ? tail->next : head) = e;
    tail = e;
}

void join_set_core::link_ready(join_entry_base* e) noexcept {
    push_back(ready_head_, ready_tail_, e);
    e->where = join_entry_base::place::ready;
}

join_wait::~join_wait() {
    if (registered_) core_.withdraw();
    // X8's control: an entry handed over at the wake is dropped with the awaiter that never
    // resumed, its outcome lost.
    if (handed_) handed_->unref();
}

bool join_wait::await_suspend(std::coroutine_handle<> h) {
    task_header* t = suspend_current(h, &ready, this, &describe);
    registered_ = !core_.may_resume(t, &handed_);
    return registered_;
}

join_entry_base* join_wait::take_ready() noexcept {
    if (registered_) {
        core_.withdraw();  // after it, no completion writes handed_
        registered_ = false;
    }
    if (handed_) return std::exchange(handed_, nullptr);
    return core_.pop_ready();
}

bool join_wait::ready(const ready_hook* self) noexcept {
    auto* a = const_cast<join_wait*>(static_cast<const join_wait*>(self));
    return a->core_.may_resume(nullptr, &a->handed_);
}

void join_wait::describe(const ready_hook* self, wait_point& out) {
    static_cast<const join_wait*>(self)->core_.describe(out);
}

}  // namespace blitz::detail
