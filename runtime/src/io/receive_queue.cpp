// SPDX-License-Identifier: MIT
#include "io/receive_queue.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "blitz/buffer.hpp"
#include "io/buffer_pool.hpp"

namespace blitz::detail {

receive_queue::~receive_queue() {
    lock_guard l(mu_);
    for (const pool_chunk& c : chunks_) c.pool->release(c.id);
    for (const int fd : accepted_) ::close(fd);
}

void receive_queue::keep(const std::byte* p, std::size_t n, bool front) {
    if (n == 0) return;
    lock_guard l(mu_);
    if (front && kept_pos_ >= n) {
        kept_pos_ -= n;
        std::memcpy(kept_.data() + kept_pos_, p, n);
    } else {
        kept_.insert(front ? kept_.begin() + static_cast<std::ptrdiff_t>(kept_pos_) : kept_.end(),
                     p, p + n);
    }
    // release: a reader that sees the count sees the bytes (it copies them under mu_ anyway)
    bytes_.fetch_add(n, std::memory_order_release);
}

std::size_t receive_queue::take(void* out, std::size_t n) noexcept {
    if (n == 0 || (bytes() == 0 && chunks() == 0)) return 0;
    lock_guard l(mu_);
    const std::size_t have = kept_.size() - kept_pos_;
    if (have == 0 && !chunks_.empty()) {
        pool_chunk& c = chunks_.front();
        const std::size_t k = std::min<std::size_t>(n, c.len - c.off);
        std::memcpy(out, c.pool->data(c.id) + c.off, k);
        c.off += static_cast<std::uint32_t>(k);
        if (c.off == c.len) {
            c.pool->release(c.id);
            chunks_.pop_front();
            chunk_count_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: under mu_
        }
        return k;
    }
    const std::size_t k = have < n ? have : n;
    if (k) std::memcpy(out, kept_.data() + kept_pos_, k);
    kept_pos_ += k;
    if (kept_pos_ == kept_.size()) {
        kept_.clear();
        kept_pos_ = 0;
    }
    bytes_.fetch_sub(k, std::memory_order_relaxed);  // relaxed: under mu_
    return k;
}

void receive_queue::push_chunk(buffer_pool* pool, std::uint16_t id, std::uint32_t len) {
    lock_guard l(mu_);
    chunks_.push_back({pool, id, len, 0});
    // release: a reader that sees the count sees the chunk (it takes it under mu_ anyway)
    chunk_count_.fetch_add(1, std::memory_order_release);
}

bool receive_queue::take_pooled(pooled_buffer& out) {
    if (bytes() == 0 && chunks() == 0) return false;
    lock_guard l(mu_);
    if (const std::size_t have = kept_.size() - kept_pos_) {
        out = pooled_buffer(
            owned_buffer::copy_of(std::span<const std::byte>(kept_.data() + kept_pos_, have)));
        kept_.clear();
        kept_pos_ = 0;
        bytes_.fetch_sub(have, std::memory_order_relaxed);  // relaxed: under mu_
        return true;
    }
    if (chunks_.empty()) return false;
    const pool_chunk c = chunks_.front();
    chunks_.pop_front();
    chunk_count_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: under mu_
    out = pooled_buffer(c.pool, c.id, c.pool->data(c.id) + c.off, c.len - c.off);  // its ref
    return true;
}

void receive_queue::push_accepted(int fd) {
    lock_guard l(mu_);
    accepted_.push_back(fd);
    // release: an accept that sees the count sees the descriptor (it takes it under mu_ anyway)
    accepted_count_.fetch_add(1, std::memory_order_release);
}

int receive_queue::take_accepted() noexcept {
    if (accepted() == 0) return -1;
    lock_guard l(mu_);
    if (accepted_.empty()) return -1;
    const int fd = accepted_.front();
    accepted_.pop_front();
    accepted_count_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: under mu_
    return fd;
}

std::deque<int> receive_queue::take_accepted_all() noexcept {
    std::deque<int> q;
    lock_guard l(mu_);
    q.swap(accepted_);
    accepted_count_.store(0, std::memory_order_relaxed);  // relaxed: under mu_
    return q;
}

}  // namespace blitz::detail
