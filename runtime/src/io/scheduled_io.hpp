// SPDX-License-Identifier: MIT
#pragma once
// scheduled_io: one registered file descriptor's readiness and the tasks waiting on it.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/wait_list.hpp"
#include "io/op_slab.hpp"

namespace blitz {
class pooled_buffer;
}

namespace blitz::detail {

class buffer_pool;

// The readiness word holds the ready bits (low 32) and an event count (high 32) that grows
// with every event the driver delivers. A reader that met EAGAIN clears its bit only if the
// count is still the one it read before the syscall (Tokio's tick rule), so an event that
// arrived in between is never erased.
//
// Waiters: one FIFO per direction under mu_. The driver sets bits first (release), then takes
// mu_ and completes the waiters whose direction became ready; a waiter links under mu_ after
// re-reading the bits, so it either sees the event or is linked before the driver looks.
//
// Lifetime: the driver's registration_set owns the block. It is freed when the user has
// deregistered and the backend can no longer report events naming it (epoll: the driver's
// next turn; io_uring: the poll's final completion), never earlier (R6).
// Thread-safety: every method from any thread.
class scheduled_io {
public:
    explicit scheduled_io(int fd) noexcept : fd_(fd) {}
    ~scheduled_io();  // gives queued pool buffers back
    scheduled_io(const scheduled_io&) = delete;
    scheduled_io& operator=(const scheduled_io&) = delete;

    int fd() const noexcept { return fd_; }

    // Driver: `bits` became true. Wakes the waiters whose direction they end.
    void set_ready(std::uint32_t bits) noexcept;
    io_ready_event poll(io_direction dir) const noexcept;
    void clear(io_ready_event ev) noexcept;
    bool wait(io_direction dir, wait_node& node, waker w);
    void cancel_wait(wait_node& node) noexcept;
    // True while some task waits on this descriptor (tests and shutdown checks).
    bool has_waiters() const;

    // R4: bytes an abandoned receive got late, returned first by the next read. keep_unread
    // appends and wakes the readers; take_unread copies out up to `n` bytes (0: none kept).
    // `front`: the bytes were taken from the kept ones and go back before the rest.
    void keep_unread(const std::byte* p, std::size_t n, bool front = false);
    // take_unread also copies from the pooled queue once no unread bytes are left (they are
    // older than every queued buffer: see io_driver::start).
    std::size_t take_unread(void* out, std::size_t n) noexcept;
    // R7: buffers a multishot pooled receive filled, in arrival order, until a read takes them.
    // push_chunk queues one (it holds a pool reference) without waking anyone: the caller
    // calls wake_readers() once its locks are released. take_pooled gives the oldest kept
    // bytes whole: the unread bytes (copied to a heap buffer) or the front buffer's rest.
    void push_chunk(buffer_pool* pool, std::uint16_t id, std::uint32_t len);
    std::size_t chunks() const noexcept { return chunk_count_.load(std::memory_order_acquire); }
    bool take_pooled(pooled_buffer& out);
    void wake_readers() noexcept;
    // A listener's multishot accept (issue 44): descriptors it accepted, in order, until an
    // accept takes them (push_accepted does not wake: the caller calls wake_readers()).
    // take_accepted returns -1 when none is queued; take_accepted_all empties the queue (the
    // listener is closing: the caller closes them, so their connections are reset, as the
    // kernel's queue would be).
    void push_accepted(int fd);
    int take_accepted() noexcept;
    std::size_t accepted_count() const noexcept {
        return accepted_count_.load(std::memory_order_acquire);
    }
    std::deque<int> take_accepted_all() noexcept;
    // True while a completion-mode receive is in the kernel or queued: a plain read then waits
    // for it to settle (it would overtake bytes the receive may yet leave for it, R4); wait()
    // links such a read even when the read direction's bits are set.
    bool recv_pending() const noexcept { return recv_pending_.load(std::memory_order_acquire); }
    void set_recv_pending(bool on) noexcept { recv_pending_.store(on, std::memory_order_release); }

    // Lazy readiness (io_uring with worker rings, issue 44): the backend's poll is armed when a
    // task first waits for readiness rather than at registration, so a stream read through
    // its multishot receive never costs a readiness completion. `lazy` (the driver that arms
    // it) is set once, before the block is shared; claim_poll() is true for the one caller (a
    // waiter, or the deregistration) that finds it unarmed: that caller arms it (or, deregistering,
    // knows no poll names it).
    class io_driver* lazy = nullptr;
    bool claim_poll() noexcept {
        // acq_rel: a claimer that loses sees the winner's arm
        return lazy != nullptr && !poll_claimed_.exchange(true, std::memory_order_acq_rel);
    }

    // io_uring, under the backend's submission mutex: the poll is being cancelled, its final
    // completion came, and POLL_REMOVEs still to complete (the block is released when the poll
    // ended and none is left: a late POLL_REMOVE must not name a reused address).
    bool removing = false;
    bool poll_ended = false;
    unsigned removals = 0;

private:
    static std::uint32_t bits_of(std::uint64_t w) noexcept { return static_cast<std::uint32_t>(w); }
    static std::uint32_t seq_of(std::uint64_t w) noexcept {
        return static_cast<std::uint32_t>(w >> 32);
    }

    const int fd_;
    atomic<std::uint64_t> word_{0};
    mutable detail::mutex mu_;
    wait_queue readers_ BLITZ_GUARDED_BY(mu_);
    wait_queue writers_ BLITZ_GUARDED_BY(mu_);
    atomic<bool> recv_pending_{false};
    atomic<bool> poll_claimed_{false};
    atomic<std::size_t> unread_count_{0};  // bytes in unread_ beyond unread_pos_
    std::vector<std::byte> unread_ BLITZ_GUARDED_BY(mu_);
    std::size_t unread_pos_ BLITZ_GUARDED_BY(mu_) = 0;
    // A filled buffer and its pool: the shared ring's, or (busy mode) the pool of the worker
    // ring whose receive filled it, so one descriptor's queue may hold buffers of several pools.
    struct pool_chunk {
        buffer_pool* pool;
        std::uint16_t id;
        std::uint32_t len, off;
    };
    std::deque<pool_chunk> chunks_ BLITZ_GUARDED_BY(mu_);
    atomic<std::size_t> chunk_count_{0};
    std::deque<int> accepted_ BLITZ_GUARDED_BY(mu_);
    atomic<std::size_t> accepted_count_{0};
    // Its completion operations, under the driver's operation lock (op_slab::of).
    friend class op_slab;
    descriptor_ops ops_;
};

}  // namespace blitz::detail
