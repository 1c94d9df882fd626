// SPDX-License-Identifier: MIT
#include "io/scheduled_io.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "blitz/buffer.hpp"
#include "io/backend.hpp"
#include "io/buffer_pool.hpp"

namespace blitz::detail {

std::uint32_t bits_from_poll_mask(std::uint32_t e) noexcept {
    static_assert(EPOLLIN == POLLIN && EPOLLOUT == POLLOUT && EPOLLRDHUP == POLLRDHUP &&
                  EPOLLHUP == POLLHUP && EPOLLERR == POLLERR && EPOLLPRI == POLLPRI);
    std::uint32_t b = 0;
    if (e & (POLLIN | POLLPRI)) b |= io_readable;
    if (e & POLLOUT) b |= io_writable;
    if (e & POLLRDHUP) b |= io_read_closed | io_readable;
    if (e & POLLHUP) b |= io_read_closed | io_write_closed | io_readable | io_writable;
    if (e & POLLERR) b |= io_error | io_readable | io_writable;
    return b;
}

void scheduled_io::set_ready(std::uint32_t bits) noexcept {
    std::uint64_t cur = word_.load(std::memory_order_relaxed);
    std::uint64_t next;
    do {
        next = (std::uint64_t{seq_of(cur) + 1} << 32) | (bits_of(cur) | bits);
        // release: a reader that sees the bits sees what the driver did before (nothing of the
        // kernel's data passes through here, but the shutdown bit orders the driver's teardown)
    } while (!word_.compare_exchange_weak(cur, next, std::memory_order_release,
                                          std::memory_order_relaxed));
    wake_batch b;
    {
        unique_lock l(mu_);
        if (bits & io_mask(io_direction::read)) wake_all(readers_, mu_, b);
        if (bits & io_mask(io_direction::write)) wake_all(writers_, mu_, b);
    }
    b.flush();
}

io_ready_event scheduled_io::poll(io_direction dir) const noexcept {
    // acquire: pairs with set_ready's release
    const std::uint64_t w = word_.load(std::memory_order_acquire);
    return {bits_of(w) & io_mask(dir), seq_of(w)};
}

void scheduled_io::clear(io_ready_event ev) noexcept {
    // Only the plain readable/writable bits: closed, error and shutdown stay.
    const std::uint32_t drop = ev.ready & (io_readable | io_writable);
    if (!drop) return;
#if BLITZ_FAULTS
    if (fault_io_clear_ignores_seq()) {  // O16's control
        word_.fetch_and(~std::uint64_t{drop}, std::memory_order_relaxed);
        return;
    }
#endif
    std::uint64_t cur = word_.load(std::memory_order_relaxed);
    // (Modelled: stress/model/models/readiness_model.cpp, whose control drops the count check.)
    while (seq_of(cur) == ev.seq || BLITZ_MODEL_DEFECT(scheduled_io_clear_ignores_seq)) {
        const std::uint64_t next = cur & ~std::uint64_t{drop};
        if (word_.compare_exchange_weak(cur, next, std::memory_order_relaxed)) return;
    }
    // A newer event arrived after the caller's read: keep its bits.
}

bool scheduled_io::wait(io_direction dir, wait_node& node, waker w) {
    lock_guard l(mu_);
    // Re-read under the lock: set_ready stores the bits before it takes mu_. A read held back by
    // a completion-mode receive in flight waits for that receive to settle, whatever the bits
    // say (end of stream stays set): the settling driver clears recv_pending_ and then calls
    // set_ready, which takes mu_ and wakes this node. Anything queued in rx_ ends a read's wait
    // at once (its pusher raised the count before its wake takes mu_).
    // (Modelled: stress/model/models/receive_queue_model.cpp, whose control skips this look.)
    if (dir == io_direction::read && !BLITZ_MODEL_DEFECT(wait_ignores_received) && rx_.any()) {
        return false;
    }
    const bool held = dir == io_direction::read && recv_pending() &&
                      !(bits_of(word_.load(std::memory_order_acquire)) & io_shutdown);
    if (!held && poll(dir).ready) return false;
    node.done.store(false, std::memory_order_relaxed);
    node.w = std::move(w);
    (dir == io_direction::read ? readers_ : writers_).push_back(&node);
    return true;
}

void scheduled_io::cancel_wait(wait_node& node) noexcept {
    lock_guard l(mu_);
    if (node.linked()) {
        node.unlink();
        node.w.reset();
    }
}

bool scheduled_io::has_waiters() const {
    lock_guard l(mu_);
    return !readers_.empty() || !writers_.empty();
}

void scheduled_io::wake_readers() noexcept {
    wake_batch b;
    {
        unique_lock l(mu_);
        wake_all(readers_, mu_, b);
    }
    b.flush();
}

}  // namespace blitz::detail
