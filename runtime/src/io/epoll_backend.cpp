// SPDX-License-Identifier: MIT
#include "io/epoll_backend.hpp"

#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "io/scheduled_io.hpp"

namespace blitz::detail {
namespace {

// The waker's registration carries this token instead of a scheduled_io.
void* const wake_token = nullptr;

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

epoll_backend::epoll_backend(unsigned max_events)
    : events_(sizeof(epoll_event) * max_events), max_events_(max_events) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) fail("blitz: epoll_create1");
    if (waker_.fd() < 0) {
        const int e = errno;
        close(ep_);
        errno = e;
        fail("blitz: eventfd");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: stays ready until the driver reads it
    ev.data.ptr = wake_token;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, waker_.fd(), &ev) != 0) {
        const int e = errno;
        close(ep_);
        errno = e;
        fail("blitz: epoll_ctl (waker)");
    }
}

epoll_backend::~epoll_backend() { close(ep_); }

int epoll_backend::enable_napi_busy_poll(unsigned usecs, const char*& what) noexcept {
    // EPIOCSPARAMS (Linux 6.9; Debian 12's headers predate it): struct epoll_params, with the
    // kernel's default budget of 8 packets per poll (BUSY_POLL_BUDGET) spelled out.
    struct epoll_params {
        std::uint32_t busy_poll_usecs;
        std::uint16_t busy_poll_budget;
        std::uint8_t prefer_busy_poll;
        std::uint8_t pad;
    } params{};
    static_assert(sizeof(epoll_params) == 8);
    params.busy_poll_usecs = usecs;
    params.busy_poll_budget = 8;
    what = "EPIOCSPARAMS";
    if (::ioctl(ep_, _IOW(0x8A, 0x01, epoll_params), &params) != 0) return -errno;
    return 0;
}

void epoll_backend::add(scheduled_io* s) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = s;
    counts.bump(counts.submits);
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, s->fd(), &ev) != 0) fail("blitz: epoll_ctl(ADD)");
}

void epoll_backend::remove(scheduled_io* s) noexcept {
    counts.bump(counts.submits);
    epoll_ctl(ep_, EPOLL_CTL_DEL, s->fd(), nullptr);  // fails only if already closed: fine
}

std::size_t epoll_backend::wait(std::chrono::nanoseconds timeout, io_event_sink& sink) noexcept {
    int ms = 0;
    if (timeout.count() < 0) {
        ms = -1;
    } else if (timeout.count() > 0) {
        // Rounded up: a wait that ends before the deadline would spin on a near timer.
        const auto up = (timeout.count() + 999'999) / 1'000'000;
        ms = up > 3'600'000 ? 3'600'000 : static_cast<int>(up);
    }
    auto* evs = reinterpret_cast<epoll_event*>(events_.data());
    counts.bump(counts.waits);
    const int n = epoll_wait(ep_, evs, static_cast<int>(max_events_), ms);
    std::size_t reported = 0;
    for (int i = 0; i < n; ++i) {
        if (evs[i].data.ptr == wake_token) {
            waker_.drain(counts);
            continue;
        }
        sink.ready(static_cast<scheduled_io*>(evs[i].data.ptr), bits_from_poll_mask(evs[i].events));
        ++reported;
    }
    return reported;
}

void epoll_backend::wake() noexcept { waker_.wake(counts); }

}  // namespace blitz::detail
