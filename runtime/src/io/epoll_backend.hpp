// SPDX-License-Identifier: MIT
#pragma once
// The epoll backend: every descriptor registered once, edge-triggered, for both directions
// (IO.md 0.6: one epoll_ctl per descriptor, not per operation); an eventfd as the waker.

#include <vector>

#include "io/backend.hpp"

namespace blitz::detail {

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

private:
    int ep_ = -1;
    eventfd_waker waker_;
    std::vector<unsigned char> events_;  // epoll_event[], sized at construction
    unsigned max_events_;
};

}  // namespace blitz::detail
