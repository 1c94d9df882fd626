// SPDX-License-Identifier: MIT
#include "io/registration_set.hpp"

namespace blitz::detail {

// A block with the set's bookkeeping; every field after the base is guarded by the set's mutex.
struct registration_set::node final : scheduled_io {
    explicit node(int fd) noexcept : scheduled_io(fd) {}
    node* prev = nullptr;          // live list
    node* next = nullptr;          // live list
    node* next_pending = nullptr;  // pending list
    bool released = false;         // by its owner
    bool backend_done = false;     // the backend will not name it again
};

registration_set::~registration_set() {
    lock_guard l(mu_);
    while (node* n = live_) {
        live_ = n->next;
        delete n;
    }
}

scheduled_io* registration_set::add(int fd) {
    auto* n = new node(fd);
    lock_guard l(mu_);
    n->next = live_;
    if (live_) live_->prev = n;
    live_ = n;
    ++registrations_;
    ++blocks_;
    if (shut_down_) n->set_ready(io_shutdown);
    return n;
}

void registration_set::unlink_locked(node* n) noexcept {
    if (n->prev) n->prev->next = n->next;
    if (n->next) n->next->prev = n->prev;
    if (live_ == n) live_ = n->next;
    --blocks_;
}

void registration_set::discard(scheduled_io* s) noexcept {
    auto* n = static_cast<node*>(s);
    {
        lock_guard l(mu_);
        unlink_locked(n);
    }
    delete n;
}

void registration_set::release(scheduled_io* s, bool backend_done) noexcept {
    auto* n = static_cast<node*>(s);
    lock_guard l(mu_);
    n->released = true;
    if (backend_done) n->backend_done = true;
    n->next_pending = pending_;
    pending_ = n;
}

void registration_set::backend_released(scheduled_io* s) noexcept {
    lock_guard l(mu_);
    static_cast<node*>(s)->backend_done = true;
}

std::size_t registration_set::free_released() noexcept {
    node* dead = nullptr;
    std::size_t freed = 0;
    {
        lock_guard l(mu_);
        node** link = &pending_;
        while (node* n = *link) {
            if (!n->backend_done) {
                link = &n->next_pending;
                continue;
            }
            *link = n->next_pending;
            unlink_locked(n);
            n->next_pending = dead;
            dead = n;
            ++freed;
        }
    }
    while (node* n = dead) {  // destructors (pool buffers going back) outside the lock
        dead = n->next_pending;
        delete n;
    }
    return freed;
}

void registration_set::shutdown() noexcept {
    // set_ready takes the block's own mutex and only schedules the waiters' tasks.
    lock_guard l(mu_);
    shut_down_ = true;
    for (node* n = live_; n; n = n->next) n->set_ready(io_shutdown);
}

std::uint64_t registration_set::registrations() const {
    lock_guard l(mu_);
    return registrations_;
}

std::uint64_t registration_set::blocks() const {
    lock_guard l(mu_);
    return blocks_;
}

}  // namespace blitz::detail
