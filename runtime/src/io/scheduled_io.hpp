// SPDX-License-Identifier: MIT
#pragma once
// scheduled_io: one registered file descriptor's readiness and the tasks waiting on it.

#include <cstddef>
#include <cstdint>

#include "base/atomic.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/wait_list.hpp"
#include "io/op_slab.hpp"
#include "io/receive_queue.hpp"

namespace blitz::detail {

// One registered descriptor: its readiness, the tasks waiting on it, what its completion
// operations received and nobody read yet (receive_queue), and its side of those operations
// (descriptor_ops, reachable only through op_slab::of under the operation lock).
//
// Protocol:
//   1. The driver reports an edge with set_ready(bits): the bits and the event count rise in
//      one word, then it takes mu_ and wakes the waiters whose direction became ready.
//   2. A reader polls the word (poll), makes its syscall, and on EAGAIN clears its bits with the
//      count it polled (clear: Tokio's tick rule), then links a waiter (wait), which re-reads
//      the word under mu_ and refuses to link when the direction is ready again.
//   3. With worker rings the backend's poll is armed lazily: the first waiter (or the
//      deregistration) that claims it (claim_poll) arms it.
//
// Invariants:
//  - An edge is never erased: clear() drops a bit only when the count is still the one the
//    reader polled before its syscall (O16; modelled in stress/model/models/readiness_model.cpp,
//    whose control drops the count check and is caught).
//  - A linked waiter is woken by the next set_ready of its direction, by shutdown, or unlinked
//    by cancel_wait; nothing else removes it.
//  - A read whose direction is held by a completion receive (recv_pending) waits for that
//    receive to settle, whatever the bits say, unless the descriptor is shut down.
//
// Memory ordering: set_ready raises the word with release and then takes mu_; wait() reads it
// (acquire) under mu_, so a waiter either sees the edge or is linked before the driver looks.
// claim_poll is an acq_rel exchange: the loser sees the winner's arm.
//
// Lifetime: the driver's registration_set owns the block. It is freed when the user has
// deregistered and the backend can no longer report events naming it (epoll: the driver's
// next turn; io_uring: the poll's final completion), never earlier (R6).
// Thread-safety: every method from any thread.
class scheduled_io {
public:
    explicit scheduled_io(int fd) noexcept : fd_(fd) {}
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

    // What its completion operations received and nobody read yet (receive_queue.hpp). A
    // push there is followed by wake_readers() (or set_ready), once the pusher's locks are let
    // go; a read's wait ends at once while the queue holds something.
    receive_queue& received() noexcept { return rx_; }
    void wake_readers() noexcept;
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
    receive_queue rx_;
    // Its completion operations, under the driver's operation lock (op_slab::of).
    friend class op_slab;
    descriptor_ops ops_;
    // io_uring, under the backend's submission mutex (uring_backend::removal_of): the poll is
    // being cancelled, its final completion came, and POLL_REMOVEs still to complete (the block
    // is released when the poll ended and none is left: a late POLL_REMOVE must not name a
    // reused address).
    friend class uring_backend;
    struct poll_removal {
        bool removing = false;
        bool ended = false;
        unsigned removals = 0;
    } removal_;
};

}  // namespace blitz::detail
