// SPDX-License-Identifier: MIT
#pragma once
// blitz::owned_buffer: a heap buffer an I/O operation takes by value and gives back with its
// result (issue 16, IO.md 7.3 R2). While a completion-mode operation is in flight the kernel
// writes into or reads from the buffer; owning it, rather than borrowing a span of the caller's
// frame, is what lets a task be aborted at any moment without the kernel touching freed memory.

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace blitz {

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

}  // namespace blitz
