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
    std::uint64_t cur = word_.load(std::memory_order_relaxed);
    // (Modelled: stress/model/models/readiness_model.cpp, whose control drops the count check.)
    while (seq_of(cur) == ev.seq || BLITZ_MODEL_DEFECT(scheduled_io_clear_ignores_seq)) {
        const std::uint64_t next = cur & ~std::uint64_t{drop};
        if (word_.compare_exchange_weak(cur, next, std::memory_order_relaxed)) return;
    }
    // A newer event arrived after the caller's read: keep its bits.
}

scheduled_io::~scheduled_io() {
    for (const pool_chunk& c : chunks_) c.pool->release(c.id);
    for (const int fd : accepted_) ::close(fd);
}

void scheduled_io::push_accepted(int fd) {
    lock_guard l(mu_);
    accepted_.push_back(fd);
    // release: an accept that sees the count sees the descriptor (it takes it under mu_ anyway)
    accepted_count_.fetch_add(1, std::memory_order_release);
}

int scheduled_io::take_accepted() noexcept {
    if (accepted_count_.load(std::memory_order_acquire) == 0) return -1;
    lock_guard l(mu_);
    if (accepted_.empty()) return -1;
    const int fd = accepted_.front();
    accepted_.pop_front();
    accepted_count_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: under mu_
    return fd;
}

std::deque<int> scheduled_io::take_accepted_all() noexcept {
    std::deque<int> q;
    lock_guard l(mu_);
    q.swap(accepted_);
    accepted_count_.store(0, std::memory_order_relaxed);  // relaxed: under mu_
    return q;
}

bool scheduled_io::wait(io_direction dir, wait_node& node, waker w) {
    lock_guard l(mu_);
    // Re-read under the lock: set_ready stores the bits before it takes mu_. A read held back by
    // a completion-mode receive in flight waits for that receive to settle, whatever the bits
    // say (end of stream stays set): the settling driver clears recv_pending_ and then calls
    // set_ready, which takes mu_ and wakes this node. Kept bytes or queued pool buffers (pushed
    // under mu_) end a read's wait at once.
    if (dir == io_direction::read &&
        (unread_pos_ < unread_.size() || !chunks_.empty() || !accepted_.empty())) {
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

void scheduled_io::keep_unread(const std::byte* p, std::size_t n, bool front) {
    if (n == 0) return;
    {
        lock_guard l(mu_);
        if (front && unread_pos_ >= n) {
            unread_pos_ -= n;
            std::memcpy(unread_.data() + unread_pos_, p, n);
        } else {
            unread_.insert(
                front ? unread_.begin() + static_cast<std::ptrdiff_t>(unread_pos_) : unread_.end(),
                p, p + n);
        }
        // release: a reader that sees the count sees the bytes (it copies them under mu_ anyway)
        unread_count_.fetch_add(n, std::memory_order_release);
    }
    set_ready(io_readable);  // a reader waiting for the kernel now has bytes here
}

std::size_t scheduled_io::take_unread(void* out, std::size_t n) noexcept {
    if (n == 0) return 0;
    if (unread_count_.load(std::memory_order_acquire) == 0 &&
        chunk_count_.load(std::memory_order_acquire) == 0) {
        return 0;
    }
    lock_guard l(mu_);
    const std::size_t have = unread_.size() - unread_pos_;
    if (have == 0 && !chunks_.empty()) {
        pool_chunk& c = chunks_.front();
        const std::size_t k = std::min<std::size_t>(n, c.len - c.off);
        std::memcpy(out, c.pool->data(c.id) + c.off, k);
        c.off += static_cast<std::uint32_t>(k);
        if (c.off == c.len) {
            c.pool->release(c.id);
            chunks_.pop_front();
            chunk_count_.fetch_sub(1, std::memory_order_relaxed);
        }
        return k;
    }
    const std::size_t k = have < n ? have : n;
    if (k) std::memcpy(out, unread_.data() + unread_pos_, k);
    unread_pos_ += k;
    if (unread_pos_ == unread_.size()) {
        unread_.clear();
        unread_pos_ = 0;
    }
    unread_count_.fetch_sub(k, std::memory_order_relaxed);
    return k;
}

void scheduled_io::push_chunk(buffer_pool* pool, std::uint16_t id, std::uint32_t len) {
    lock_guard l(mu_);
    chunks_.push_back({pool, id, len, 0});
    // release: a reader that sees the count sees the chunk (it takes it under mu_ anyway)
    chunk_count_.fetch_add(1, std::memory_order_release);
}

bool scheduled_io::take_pooled(pooled_buffer& out) {
    if (unread_count_.load(std::memory_order_acquire) == 0 &&
        chunk_count_.load(std::memory_order_acquire) == 0) {
        return false;
    }
    lock_guard l(mu_);
    if (const std::size_t have = unread_.size() - unread_pos_) {
        out = pooled_buffer(
            owned_buffer::copy_of(std::span<const std::byte>(unread_.data() + unread_pos_, have)));
        unread_.clear();
        unread_pos_ = 0;
        unread_count_.fetch_sub(have, std::memory_order_relaxed);
        return true;
    }
    if (chunks_.empty()) return false;
    const pool_chunk c = chunks_.front();
    chunks_.pop_front();
    chunk_count_.fetch_sub(1, std::memory_order_relaxed);
    out = pooled_buffer(c.pool, c.id, c.pool->data(c.id) + c.off, c.len - c.off);  // its ref
    return true;
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
