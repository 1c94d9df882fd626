// SPDX-License-Identifier: MIT
#include "io/epoll_backend.hpp"

#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "io/scheduled_io.hpp"
#include "io/uring_backend.hpp"

namespace blitz::detail {
namespace {

// The waker's registration carries this token instead of a scheduled_io, and the file ring's
// the address of this one (never a scheduled_io's).
void* const wake_token = nullptr;
char file_ring_mark;
void* const file_ring_token = &file_ring_mark;

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

void epoll_backend::attach_file_ring(std::unique_ptr<uring_backend> ring) {
    epoll_event ev{};
    // Level-triggered: the descriptor stays readable while the completion queue holds entries,
    // so a wait that reaped only part of them is told again.
    ev.events = EPOLLIN;
    ev.data.ptr = file_ring_token;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, ring->ring_fd(), &ev) != 0)
        fail("blitz: epoll_ctl (file ring)");
    files_ = std::move(ring);
}

void epoll_backend::submit(io_op_state* op) noexcept { files_->submit(op); }
void epoll_backend::cancel(io_op_state* op) noexcept { files_->cancel(op); }
void epoll_backend::flush() noexcept {
    if (files_) files_->flush();
}
bool epoll_backend::runs(io_op_kind kind) const noexcept { return files_ && files_->runs(kind); }

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
    if (files_ && ms != 0) files_->flush();  // nothing staged may wait behind our sleep
    auto* evs = reinterpret_cast<epoll_event*>(events_.data());
    counts.bump(counts.waits);
    const int n = epoll_wait(ep_, evs, static_cast<int>(max_events_), ms);
    std::size_t reported = 0;
    for (int i = 0; i < n; ++i) {
        if (evs[i].data.ptr == wake_token) {
            waker_.drain(counts);
            continue;
        }
        if (evs[i].data.ptr == file_ring_token) {
            // The ring's completion queue, read in memory (its completions reach `sink`).
            reported += files_->wait(std::chrono::nanoseconds(0), sink);
            continue;
        }
        sink.ready(static_cast<scheduled_io*>(evs[i].data.ptr), bits_from_poll_mask(evs[i].events));
        ++reported;
    }
    return reported;
}

void epoll_backend::wake() noexcept { waker_.wake(counts); }

}  // namespace blitz::detail
