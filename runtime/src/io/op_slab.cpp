// SPDX-License-Identifier: MIT
#include "io/op_slab.hpp"

#include "io/scheduled_io.hpp"

namespace blitz::detail {

op_slab::~op_slab() {
    // Nobody can reach the slab any more. A state still in flight (a drain that gave up) keeps
    // its memory, which the kernel may yet write into.
    lock_guard l(mu_);
    if (in_flight_ != 0) {
        for (auto& c : chunks_) (void)c.release();
    }
}

io_op_state* op_slab::alloc(scheduled_io* s, io_op_kind kind, int fd) {
    if (!free_) {
        constexpr std::size_t chunk = 64;
        chunks_.push_back(std::make_unique<io_op_state[]>(chunk));
        io_op_state* c = chunks_.back().get();
        for (std::size_t i = 0; i < chunk; ++i) {
            c[i].next = free_;
            free_ = &c[i];
        }
    }
    io_op_state* op = free_;
    free_ = op->next;
    op->phase.store(io_op_state::in_flight, std::memory_order_relaxed);  // relaxed: under mu_
    op->kind = kind;
    op->cancel_sent = false;
    op->deferred = false;
    op->from_unread = false;
    op->linked = false;
    op->result = 0;
    op->fd = s ? s->fd() : fd;
    op->ring = -1;
    op->sio = s;
    op->qnext = nullptr;
    op->prev = nullptr;
    op->next = live_;
    if (live_) live_->prev = op;
    live_ = op;
    if (s) ++s->ops_.ops;
    ++started_;
    ++in_flight_;
    return op;
}

int op_slab::release(io_op_state* op) {
    if (op->prev) op->prev->next = op->next;
    if (op->next) op->next->prev = op->prev;
    if (live_ == op) live_ = op->next;
    --in_flight_;
    int close_fd = -1;
    if (scheduled_io* s = op->sio) {
        descriptor_ops& d = s->ops_;
        if (--d.ops == 0 && d.close_fd >= 0) close_fd = std::exchange(d.close_fd, -1);
    }
    op->w.reset();
    op->sio = nullptr;
    ++op->gen;
    op->prev = nullptr;
    op->next = free_;
    free_ = op;
    return close_fd;
}

bool op_slab::close(scheduled_io* s, int fd) {
    descriptor_ops& d = s->ops_;
    d.closing = true;
    if (d.ops == 0) return true;
    d.close_fd = fd;
    ++deferred_closes_;
    return false;
}

descriptor_ops& op_slab::of(scheduled_io* s) { return s->ops_; }

}  // namespace blitz::detail
