// SPDX-License-Identifier: MIT
#pragma once
// The epoll backend: every descriptor registered once, edge-triggered, for both directions
// (IO.md 0.6: one epoll_ctl per descriptor, not per operation); an eventfd as the waker.
// Optionally a file ring beside it: an io_uring ring that runs file operations only, whose
// descriptor is registered in the epoll instance, so a completion wakes the driver's wait and
// the driver reaps the ring's completion queue (Tokio's io_uring file support works the same
// way). Sockets stay on epoll, where this kernel serves them with half the CPU of io_uring
// readiness polls (docs/guide/io.md; issue 44).
//
// Invariants: a registered descriptor's events are reported until remove() returns; after it,
// only an event already taken by a wait in progress may still name the block, which the driver
// frees at its next turn (R6). Memory ordering: the kernel's; the waker's is eventfd_waker's.
// Thread-safety: add, remove and wake from any thread; wait by the driver's lock holder.

#include <memory>
#include <vector>

#include "io/backend.hpp"

namespace blitz::detail {

class uring_backend;

class epoll_backend final : public io_backend {
public:
    // Throws std::system_error if epoll or the eventfd cannot be created.
    explicit epoll_backend(unsigned max_events);
    ~epoll_backend() override;

    const char* name() const noexcept override { return "epoll"; }
    void add(scheduled_io* s) override;
    void remove(scheduled_io* s) noexcept override;
    bool releases_at_once() const noexcept override { return true; }
    std::size_t wait(std::chrono::nanoseconds timeout, io_event_sink& sink) noexcept override;
    void wake() noexcept override;
    bool free_poll() const noexcept override { return false; }
    int enable_napi_busy_poll(unsigned usecs, const char*& what) noexcept override;

    // The file ring (see above). Call once, before the driver is shared. Throws
    // std::system_error if the ring's descriptor cannot be registered.
    void attach_file_ring(std::unique_ptr<uring_backend> ring);
    // File operations go to the file ring; sockets have no completion operations here.
    void submit(io_op_state* op) noexcept override;
    void cancel(io_op_state* op) noexcept override;
    void flush() noexcept override;
    bool runs(io_op_kind kind) const noexcept override;

private:
    std::unique_ptr<uring_backend> files_;  // the file ring, or null
    int ep_ = -1;
    eventfd_waker waker_;
    std::vector<unsigned char> events_;  // epoll_event[], sized at construction
    unsigned max_events_;
};

}  // namespace blitz::detail
