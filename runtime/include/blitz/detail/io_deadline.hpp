// SPDX-License-Identifier: MIT
#pragma once
// The deadline a timeout() lends to the I/O operations its branches start (issue 44: linked
// timeouts).

#include <chrono>

namespace blitz::detail {

// The earliest deadline of the timeout()s whose branches this thread is starting now, or
// time_point::max() outside any. An io_uring completion operation started meanwhile (an owned
// read or write) is submitted with a linked timeout at that deadline (IORING_OP_LINK_TIMEOUT,
// absolute on CLOCK_MONOTONIC, which steady_clock is), so the kernel ends it on time by itself
// and the timeout's own timer then finds it ended instead of sending it a cancel.
inline thread_local std::chrono::steady_clock::time_point tl_io_deadline =
    std::chrono::steady_clock::time_point::max();

// Lends `deadline` (if earlier than the current one) while the scope lives. Only a select's
// await_suspend may hold one: everything started under it belongs to that select's branches,
// which the select's timer destroys at the deadline.
class io_deadline_scope {
public:
    explicit io_deadline_scope(std::chrono::steady_clock::time_point deadline) noexcept
        : prev_(tl_io_deadline) {
        if (deadline < prev_) tl_io_deadline = deadline;
    }
    ~io_deadline_scope() { tl_io_deadline = prev_; }
    io_deadline_scope(const io_deadline_scope&) = delete;
    io_deadline_scope& operator=(const io_deadline_scope&) = delete;

private:
    std::chrono::steady_clock::time_point prev_;
};

}  // namespace blitz::detail
