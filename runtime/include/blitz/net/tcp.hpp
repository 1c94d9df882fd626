// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// TCP: blitz::net::tcp_listener and blitz::net::tcp_stream (issue 16). What every stream and
// listener offers (read, write, accept, split, cancel safety, errors) is in net/socket.hpp.

#include <chrono>
#include <optional>

#include "blitz/net/socket.hpp"

namespace blitz::net {

class tcp_stream : public stream_socket {
public:
    using stream_socket::stream_socket;

    // Connects to `addr` (a non-blocking connect, then writability and SO_ERROR). Errors such
    // as std::errc::connection_refused come back in the result.
    static task<io_result<tcp_stream>> connect(socket_address addr);

    io_result<void> set_nodelay(bool on) noexcept;
    io_result<void> set_keepalive(bool on) noexcept;
    // SO_LINGER: nullopt turns it off; zero makes close() send a reset.
    io_result<void> set_linger(std::optional<std::chrono::seconds> t) noexcept;
    // SO_BUSY_POLL: a receive first polls the NIC queue the connection's packets arrive on, for
    // up to `t` (0: off). Kernels that guard raising it above net.core.busy_read refuse it
    // without CAP_NET_ADMIN (EPERM; Linux 6.18 accepts it unprivileged); no effect over
    // loopback (no NAPI context). config::socket_busy_poll sets it on every socket.
    io_result<void> set_busy_poll(std::chrono::microseconds t) noexcept;
    io_result<std::chrono::microseconds> busy_poll() const noexcept;
};

// tcp_listener::bind(addr, backlog), co_await l.accept() -> io_result<tcp_stream>.
using tcp_listener = basic_listener<tcp_stream>;

}  // namespace blitz::net
