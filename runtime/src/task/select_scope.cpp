// SPDX-License-Identifier: MIT
#include "blitz/detail/select_scope.hpp"

#include <stdexcept>

#include "blitz/detail/faults.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/dump.hpp"

namespace blitz::detail {

void select_scope::enter() {
    t_ = current_task();
    if (!t_) {
        throw std::logic_error(
            "blitz::select/race/timeout: must be awaited inside a blitz task (one spawned on a "
            "runtime or run by runtime::block_on)");
    }
    parent_ = t_->scope_;
    root_ = parent_ ? parent_->root_ : this;
    depth_ = parent_ ? parent_->depth_ + 1 : 0;
    t_->scope_ = this;
}

void select_scope::leave_entered() noexcept {
    // Scopes nested below this one may still be current (a branch that lost while it was
    // selecting itself): they go with this one. A scope that is no longer on the chain (an
    // outer one left first, or it was a losing branch of a scope still waiting) changes nothing.
    for (select_scope* c = t_->scope_; c; c = c->parent_) {
        if (c == this) {
            t_->scope_ = parent_;
            break;
        }
    }
    if (t_->ready_ == this) t_->ready_ = nullptr;
    t_ = nullptr;
}

void select_scope::record(std::coroutine_handle<> h, ready_hook* hook) noexcept {
    slots_[active_] = scope_slot{h, hook, true};
    // The task's own readiness check is always the outermost scope's.
    t_->ready_ = root_;
}

void select_scope::install() noexcept {
    if (parent_) {
        parent_->record(std::coroutine_handle<>{}, this);
    } else {
        t_->ready_ = this;
    }
}

void select_scope::make_current() noexcept { t_->scope_ = this; }

unsigned select_scope::add_hooks(task_header* t, drop_hook* hooks, unsigned max) noexcept {
    unsigned n = 0;
    for (select_scope* s = t ? t->scope_ : nullptr; s && n < max; s = s->parent_, ++n) {
        drop_hook& h = hooks[n];
        h.owner = s;
        h.slot = s->active_;
        h.prev = nullptr;
        h.next = s->hooks_;
        if (s->hooks_) s->hooks_->prev = &h;
        s->hooks_ = &h;
    }
    return n;
}

void select_scope::remove_hooks(drop_hook* hooks, unsigned n) noexcept {
    for (unsigned i = 0; i < n; ++i) {
        drop_hook& h = hooks[i];
        if (h.prev) {
            h.prev->next = h.next;
        } else {
            h.owner->hooks_ = h.next;
        }
        if (h.next) h.next->prev = h.prev;
    }
}

bool select_scope::losers_settled(unsigned winner) noexcept {
    bool all = true;
    for (drop_hook* h = hooks_; h; h = h->next) {
        if (h->slot != winner && !h->settle(h)) all = false;
    }
    return all;
}

// Chooses slot i: resumes it once the losers' hooks have settled.
bool select_scope::resume_slot(unsigned i) noexcept {
    if (!losers_settled(i) && !BLITZ_FAULT(fault_select_skips_loser_settle())) {
        decided_ = static_cast<int>(i);
        return false;
    }
    decided_ = -1;
    active_ = i;
    const scope_slot& sl = slots_[i];
    if (sl.h) {  // an inner scope set both itself
        t_->resume_point_ = sl.h;
        t_->scope_ = this;  // the resumed branch's next suspension lands here
    }
    return true;
}

std::coroutine_handle<> select_scope::suspended_in() const noexcept {
    for (unsigned i = 0; i < n_; ++i) {
        const scope_slot& sl = slots_[i];
        if (!sl.armed) continue;
        if (sl.h) return sl.h;
        if (const select_scope* inner = of(sl.hook)) {
            if (auto h = inner->suspended_in()) return h;
        }
    }
    return {};
}

void select_scope::describe_branches(const ready_hook* self, wait_point& out) {
    const auto* s = static_cast<const select_scope*>(self);
    out.kind = "select";
    std::string branches;
    unsigned waiting = 0;
    // Stuck only if every waiting branch is (each provable), and none has a deadline.
    bool provable = true;
    for (unsigned i = 0; i < s->n_; ++i) {
        const scope_slot& sl = s->slots_[i];
        if (!sl.armed) continue;
        ++waiting;
        wait_point b;
#if BLITZ_INSPECT
        if (sl.hook && sl.hook->describe) sl.hook->describe(sl.hook, b);
#endif
        if (!branches.empty()) branches += " | ";
        branches += b.kind.empty() ? std::string("?") : b.kind;
        if (!b.detail.empty()) branches += " (" + b.detail + ")";
        const bool has_deadline = b.deadline.time_since_epoch().count() != 0;
        if (has_deadline &&
            (out.deadline.time_since_epoch().count() == 0 || b.deadline < out.deadline))
            out.deadline = b.deadline;
        if (!out.object) out.object = b.object;
        if (out.fd < 0) out.fd = b.fd;
        if (out.task == 0) out.task = b.task;
        provable = provable && b.provable && !has_deadline;
        out.ended_by_tasks.insert(out.ended_by_tasks.end(), b.ended_by_tasks.begin(),
                                  b.ended_by_tasks.end());
        out.ended_by_handles.insert(out.ended_by_handles.end(), b.ended_by_handles.begin(),
                                    b.ended_by_handles.end());
    }
    // A decided winner waiting for its losers to settle resumes without any branch's help.
    out.provable = provable && waiting > 0 && s->decided_ < 0;
    out.detail =
        std::to_string(waiting) + " of " + std::to_string(s->n_) + " branches: " + branches;
}

bool select_scope::win_during_setup(unsigned i, std::coroutine_handle<> c) noexcept {
    if (losers_settled(i)) return true;
    slots_[i] = scope_slot{c, nullptr, true};
    decided_ = static_cast<int>(i);
    return false;
}

bool select_scope::ready(const ready_hook* self) noexcept {
    auto* s = const_cast<select_scope*>(static_cast<const select_scope*>(self));
    if (s->decided_ >= 0) {
        // A winner was found and waits for losing branches to settle.
        const unsigned i = static_cast<unsigned>(s->decided_);
        const scope_slot& sl = s->slots_[i];
        if (!sl.h && !sl.hook->ready_check(sl.hook)) return false;  // an inner scope settling
        return s->resume_slot(i);
    }
    // First the branches that can tell whether they are ready, in argument order (the earliest
    // ready branch wins); a check that passes may take the resource (a granted value), which
    // then belongs to the branch chosen here.
    for (unsigned i = 0; i < s->n_; ++i) {
        scope_slot& sl = s->slots_[i];
        if (sl.armed && sl.hook && sl.hook->ready_check(sl.hook)) return s->resume_slot(i);
    }
    // Then branches that complete by being resumed (a yield): ready on any poll.
    for (unsigned i = 0; i < s->n_; ++i) {
        scope_slot& sl = s->slots_[i];
        if (sl.armed && !sl.hook) return s->resume_slot(i);
    }
    return false;
}

}  // namespace blitz::detail
