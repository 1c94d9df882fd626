// SPDX-License-Identifier: MIT
#pragma once
// buffer_pool: the io_uring provided-buffer ring that pooled receives draw from (INVARIANTS.md R7,
// 7.6). The kernel takes a buffer from the ring only when a multishot receive has data for it
// and names it in the completion; the buffer comes back to the ring when the user's
// pooled_buffer goes (from any thread). The pool is reference-counted: the driver holds one
// reference and every buffer out of the ring another, so a pooled_buffer may outlive the
// driver and its ring (it then gives its buffer back to memory nobody reads).
//
// Invariants: out() counts buffers named by a completion and not yet released; a buffer is in
// the ring, or out, never both; the pool is freed by the release of its last reference.
// Memory ordering: out_ is a count (relaxed); refs_ drops with acq_rel, so every release's ring
// writes happen before the last reference frees the pool; the ring's tail is published with
// liburing's release store, which the kernel reads.
// Thread-safety: taken() by the reaping thread, release() from any thread (mu_ serialises the
// tail's producers).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"

struct io_uring;
struct io_uring_buf_ring;

namespace blitz::detail {

class buffer_pool {
public:
    // Registers `count` buffers of `size` bytes as buffer group `group` of `ring`. Null (with
    // `why` filled) when the kernel refuses (provided-buffer rings need Linux 5.19).
    static buffer_pool* create(io_uring& ring, unsigned count, unsigned size, std::uint16_t group,
                               std::string& why);
    buffer_pool(const buffer_pool&) = delete;
    buffer_pool& operator=(const buffer_pool&) = delete;

    std::uint16_t group() const noexcept { return group_; }
    unsigned count() const noexcept { return count_; }
    unsigned buffer_size() const noexcept { return size_; }
    std::byte* data(std::uint16_t id) const noexcept {
        return mem_ + static_cast<std::size_t>(id) * size_;
    }
    // Buffers the kernel handed out (named in a completion) and not given back yet.
    unsigned out() const noexcept { return out_.load(std::memory_order_relaxed); }
    // The kernel named buffer `id` in a completion: it is out of the ring until released, and
    // holds a reference to the pool.
    void taken() noexcept {
        out_.fetch_add(1, std::memory_order_relaxed);
        refs_.fetch_add(1, std::memory_order_relaxed);
    }
    // Puts buffer `id` back in the ring and drops its reference.
    void release(std::uint16_t id) noexcept;
    // The driver's own reference.
    void unref() noexcept;

private:
    buffer_pool() = default;
    ~buffer_pool();

    std::uint16_t group_ = 0;
    unsigned count_ = 0, size_ = 0;
    std::byte* mem_ = nullptr;           // count_ * size_ bytes
    io_uring_buf_ring* ring_ = nullptr;  // count_ entries, shared with the kernel
    std::size_t ring_bytes_ = 0;
    atomic<unsigned> out_{0};
    atomic<std::uint64_t> refs_{1};
    detail::mutex mu_;  // the ring's tail has one producer at a time
};

}  // namespace blitz::detail
