// SPDX-License-Identifier: MIT
#include "io/buffer_pool.hpp"

#include <liburing.h>
#include <sys/mman.h>

#include <cstring>

#include "blitz/buffer.hpp"

namespace blitz::detail {

buffer_pool* buffer_pool::create(io_uring& ring, unsigned count, unsigned size, std::uint16_t group,
                                 std::string& why) {
    std::unique_ptr<buffer_pool, void (*)(buffer_pool*)> p(new buffer_pool(),
                                                           [](buffer_pool* b) { b->unref(); });
    p->group_ = group;
    p->count_ = count;
    p->size_ = size;
    p->ring_bytes_ = sizeof(io_uring_buf) * count;
    void* r =
        ::mmap(nullptr, p->ring_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) {
        why = std::string("mmap of the buffer ring: ") + std::strerror(errno);
        return nullptr;
    }
    p->ring_ = static_cast<io_uring_buf_ring*>(r);
    const std::size_t mem_bytes = static_cast<std::size_t>(count) * size;
    void* m =
        ::mmap(nullptr, mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        why = std::string("mmap of the pool's buffers: ") + std::strerror(errno);
        return nullptr;
    }
    p->mem_ = static_cast<std::byte*>(m);
    io_uring_buf_ring_init(p->ring_);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uint64_t>(p->ring_);
    reg.ring_entries = count;
    reg.bgid = group;
    if (const int e = io_uring_register_buf_ring(&ring, &reg, 0); e < 0) {
        why = std::string("io_uring_register_buf_ring: ") + std::strerror(-e);
        return nullptr;
    }
    const int mask = io_uring_buf_ring_mask(count);
    for (unsigned i = 0; i < count; ++i) {
        io_uring_buf_ring_add(p->ring_, p->data(static_cast<std::uint16_t>(i)), size,
                              static_cast<unsigned short>(i), mask, static_cast<int>(i));
    }
    io_uring_buf_ring_advance(p->ring_, static_cast<int>(count));
    return p.release();
}

buffer_pool::~buffer_pool() {
    if (mem_) ::munmap(mem_, static_cast<std::size_t>(count_) * size_);
    if (ring_) ::munmap(ring_, ring_bytes_);
}

void buffer_pool::release(std::uint16_t id) noexcept {
    {
        lock_guard l(mu_);
        io_uring_buf_ring_add(ring_, data(id), size_, id, io_uring_buf_ring_mask(count_), 0);
        io_uring_buf_ring_advance(ring_, 1);  // a release store the kernel reads
    }
    out_.fetch_sub(1, std::memory_order_relaxed);
    unref();
}

void buffer_pool::unref() noexcept {
    // acq_rel: every release's ring writes happen before the unmap
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void pool_release(buffer_pool* pool, std::uint16_t id) noexcept { pool->release(id); }

}  // namespace blitz::detail
