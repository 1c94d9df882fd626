// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// UDP: blitz::net::udp_socket (issue 16). What every datagram socket offers (send_to,
// recv_from, connect, send, recv) is in net/socket.hpp.

#include "blitz/net/socket.hpp"

namespace blitz::net {

class udp_socket : public datagram_socket {
public:
    using datagram_socket::datagram_socket;
    // A socket bound to `addr` (port 0: any free port).
    static io_result<udp_socket> bind(const socket_address& addr);
    io_result<void> set_broadcast(bool on) noexcept;
};

}  // namespace blitz::net
