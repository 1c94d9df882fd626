// SPDX-License-Identifier: MIT
#pragma once
// holder_list: where the handles of a primitive live (issue 46, lost-task analysis): a channel
// keeps its senders' addresses here, so that runtime::find_lost can tell whether every sender
// sits in the frame of a task that can never run again.

#include "blitz/detail/inspect.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz::detail {

// One handle's entry: the handle object derives from it (privately), so its address is the
// handle's own.
struct holder_link {
    holder_link* prev = nullptr;
    holder_link* next = nullptr;
};

// An intrusive list of the live handles of one primitive.
// Protocol: a handle adds itself when it is made (or copied), moves its entry to its new
// address when moved (replace), and removes it when dropped; the dump reads the addresses
// (for_each) from another thread.
// Invariants: a handle is listed exactly while it holds the primitive, at its current address.
// Memory ordering: everything under the mutex.
// Thread-safety: any thread.
// With inspection compiled out (BLITZ_INSPECT=0) nothing is listed.
class holder_list {
public:
    void add(holder_link* l) noexcept {
        if constexpr (!inspect_enabled) return;
        lock_guard g(mu_);
        l->prev = nullptr;
        l->next = head_;
        if (head_) head_->prev = l;
        head_ = l;
    }
    void remove(holder_link* l) noexcept {
        if constexpr (!inspect_enabled) return;
        lock_guard g(mu_);
        unlink(l);
    }
    // `to` takes `from`'s place (a move: `from` no longer holds the primitive).
    void replace(holder_link* from, holder_link* to) noexcept {
        if constexpr (!inspect_enabled) return;
        lock_guard g(mu_);
        to->prev = from->prev;
        to->next = from->next;
        if (to->prev) {
            to->prev->next = to;
        } else {
            head_ = to;
        }
        if (to->next) to->next->prev = to;
        from->prev = from->next = nullptr;
    }
    template <class F>
    void for_each(F&& f) const {
        lock_guard g(mu_);
        for (const holder_link* l = head_; l; l = l->next) f(static_cast<const void*>(l));
    }

private:
    void unlink(holder_link* l) noexcept BLITZ_REQUIRES(mu_) {
        if (l->prev) {
            l->prev->next = l->next;
        } else {
            head_ = l->next;
        }
        if (l->next) l->next->prev = l->prev;
        l->prev = l->next = nullptr;
    }
    mutable mutex mu_;
    holder_link* head_ BLITZ_GUARDED_BY(mu_) = nullptr;
};

}  // namespace blitz::detail
