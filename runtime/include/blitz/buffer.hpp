// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::owned_buffer: a heap buffer an I/O operation takes by value and gives back with its
// result (issue 16, INVARIANTS.md R2). While a completion-mode operation is in flight the kernel
// writes into or reads from the buffer; owning it, rather than borrowing a span of the caller's
// frame, is what lets a task be aborted at any moment without the kernel touching freed memory.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace blitz {

namespace detail {
class buffer_pool;
// Gives buffer `id` back to `pool` (and the pool reference it held).
void pool_release(buffer_pool* pool, std::uint16_t id) noexcept;
}  // namespace detail

// A fixed-capacity byte buffer with a size (the bytes that hold data). Move-only.
// Thread-safety: like a std::vector.
class owned_buffer {
public:
    owned_buffer() noexcept = default;
    // Capacity `capacity`, size 0.
    explicit owned_buffer(std::size_t capacity)
        : data_(capacity ? std::make_unique_for_overwrite<std::byte[]>(capacity) : nullptr),
          capacity_(capacity) {}
    // A buffer holding a copy of `bytes` (size and capacity bytes.size()).
    static owned_buffer copy_of(std::span<const std::byte> bytes) {
        owned_buffer b(bytes.size());
        if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
        b.size_ = bytes.size();
        return b;
    }
    static owned_buffer copy_of(std::string_view text) {
        return copy_of(std::as_bytes(std::span(text.data(), text.size())));
    }
    owned_buffer(owned_buffer&& o) noexcept
        : data_(std::move(o.data_)),
          capacity_(std::exchange(o.capacity_, 0)),
          size_(std::exchange(o.size_, 0)) {}
    owned_buffer& operator=(owned_buffer&& o) noexcept {
        data_ = std::move(o.data_);
        capacity_ = std::exchange(o.capacity_, 0);
        size_ = std::exchange(o.size_, 0);
        return *this;
    }

    std::byte* data() noexcept { return data_.get(); }
    const std::byte* data() const noexcept { return data_.get(); }
    std::size_t size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return capacity_; }
    bool empty() const noexcept { return size_ == 0; }
    // The bytes that hold data.
    std::span<std::byte> bytes() noexcept { return {data_.get(), size_}; }
    std::span<const std::byte> bytes() const noexcept { return {data_.get(), size_}; }
    std::string_view view() const noexcept {
        return {reinterpret_cast<const char*>(data_.get()), size_};
    }
    // Sets the size; throws std::length_error above the capacity.
    void resize(std::size_t n) {
        if (n > capacity_) throw std::length_error("blitz::owned_buffer::resize beyond capacity");
        size_ = n;
    }
    void clear() noexcept { size_ = 0; }

private:
    std::unique_ptr<std::byte[]> data_;
    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
};

// What an owned-buffer operation gives back: its result and the buffer, always, whether the
// operation succeeded or not (tokio-uring's shape).
template <class Result>
struct buf_result {
    Result result;
    owned_buffer buffer;
};

// What a pooled receive gives (stream_socket::read_pooled): bytes the kernel put in a buffer
// of the runtime's provided-buffer pool (io_uring), or in a heap buffer (epoll, or when the pool
// ran dry). Destroying or reset() gives the buffer back to the pool, from any thread, even
// after the runtime is gone. Keeping many alive starves the pool: a descriptor whose pooled
// receive finds no buffer reads into a heap buffer instead (counted as io_pool_fallbacks).
// Move-only. Thread-safety: like a std::vector.
class pooled_buffer {
public:
    pooled_buffer() noexcept = default;
    // A heap-backed one holding `b`'s bytes.
    explicit pooled_buffer(owned_buffer b) noexcept
        : data_(b.data()), size_(b.size()), heap_(std::move(b)) {}
    pooled_buffer(detail::buffer_pool* pool, std::uint16_t id, const std::byte* data,
                  std::size_t size) noexcept
        : pool_(pool), id_(id), data_(data), size_(size) {}
    pooled_buffer(pooled_buffer&& o) noexcept
        : pool_(std::exchange(o.pool_, nullptr)),
          id_(o.id_),
          data_(std::exchange(o.data_, nullptr)),
          size_(std::exchange(o.size_, 0)),
          heap_(std::move(o.heap_)) {}
    pooled_buffer& operator=(pooled_buffer&& o) noexcept {
        if (this != &o) {
            reset();
            pool_ = std::exchange(o.pool_, nullptr);
            id_ = o.id_;
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
            heap_ = std::move(o.heap_);
        }
        return *this;
    }
    ~pooled_buffer() { reset(); }

    const std::byte* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
    std::string_view view() const noexcept { return {reinterpret_cast<const char*>(data_), size_}; }
    // True when the bytes are in the pool (false: a heap buffer, or empty).
    bool from_pool() const noexcept { return pool_ != nullptr; }
    // Gives the buffer back now; the object becomes empty.
    void reset() noexcept {
        if (pool_) detail::pool_release(std::exchange(pool_, nullptr), id_);
        heap_ = owned_buffer();
        data_ = nullptr;
        size_ = 0;
    }

private:
    detail::buffer_pool* pool_ = nullptr;
    std::uint16_t id_ = 0;
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    owned_buffer heap_;
};

}  // namespace blitz
