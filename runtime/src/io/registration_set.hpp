// SPDX-License-Identifier: MIT
#pragma once
// registration_set: the scheduled_io blocks of one I/O driver, from registration until the
// backend can no longer name them (INVARIANTS R6).

#include <cstddef>
#include <cstdint>

#include "blitz/detail/mutex.hpp"
#include "io/scheduled_io.hpp"

namespace blitz::detail {

// Every descriptor registered with a driver has a block here. A block outlives its owner's
// deregistration until the backend has said its last word about it: an event already taken
// by an epoll_wait in progress, or an io_uring poll's final completion, still names it.
//
// Protocol:
//   1. add(fd) makes a block and links it live; after shutdown() a new block reports
//      io_shutdown at once (its waits end).
//   2. release(s, backend_done) when the owner deregisters: the block joins the pending list.
//      `backend_done` says the backend can no longer name it (epoll's EPOLL_CTL_DEL, once the
//      turn in progress is over); otherwise backend_released(s) says so later (io_uring).
//   3. free_released(), at the start of each driver turn, frees the pending blocks both sides
//      have released: the turn that could still see an old event has ended.
//   4. shutdown() marks every live block io_shutdown; the destructor frees every block.
//
// Invariants:
//   - A block is freed only once its owner released it and the backend can no longer name it.
//   - blocks() counts the blocks not yet freed (live, and released but pending).
//   - A block is on the live list from add() until it is freed, and on the pending list from
//     release() until it is freed.
//
// Memory ordering: none of its own: both lists and the counters are under one mutex. The
// backend's side (an event or completion that names a block) is ordered before the block's
// free by the driver's turn: free_released() runs at the start of a turn, after the previous
// turn's dispatch ended under the same driver lock.
//
// Thread-safety: every member from any thread; one mutex guards both lists and the counters.
class registration_set {
public:
    registration_set() = default;
    ~registration_set();  // frees every block, live or pending
    registration_set(const registration_set&) = delete;
    registration_set& operator=(const registration_set&) = delete;

    // A new block for `fd`, live. Throws std::bad_alloc.
    scheduled_io* add(int fd);
    // Undoes add() for a block nobody else has seen (the backend refused the descriptor).
    void discard(scheduled_io* s) noexcept;
    void release(scheduled_io* s, bool backend_done) noexcept;
    // The backend will never name `s` again; `s` was released already (release() comes first).
    void backend_released(scheduled_io* s) noexcept;
    // Frees the released blocks the backend let go of; returns how many.
    std::size_t free_released() noexcept;
    // Every live block, and every later one, reports io_shutdown.
    void shutdown() noexcept;

    std::uint64_t registrations() const;  // add()s so far
    std::uint64_t blocks() const;         // blocks not yet freed

private:
    struct node;
    void unlink_locked(node* n) noexcept BLITZ_REQUIRES(mu_);

    mutable detail::mutex mu_;
    node* live_ BLITZ_GUARDED_BY(mu_) = nullptr;     // every block not yet freed
    node* pending_ BLITZ_GUARDED_BY(mu_) = nullptr;  // released, waiting for the backend
    bool shut_down_ BLITZ_GUARDED_BY(mu_) = false;
    std::uint64_t registrations_ BLITZ_GUARDED_BY(mu_) = 0;
    std::uint64_t blocks_ BLITZ_GUARDED_BY(mu_) = 0;
};

}  // namespace blitz::detail
