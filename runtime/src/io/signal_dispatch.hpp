// SPDX-License-Identifier: MIT
#pragma once
// Between the signal module (signal.cpp) and the I/O driver that delivers its wakes.

namespace blitz::signal::detail {
// The eventfd the signal handler writes (-1 before the first stream), shared by the process.
int shared_fd() noexcept;
// Reads the eventfd (or a dup of it) back to zero.
void drain(int fd) noexcept;
// A driver saw its registration of the eventfd (a dup of shared_fd()) readable: drains it and
// wakes the streams' waiters.
void dispatch(int fd) noexcept;
}  // namespace blitz::signal::detail
