// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// Unix-domain sockets: unix_listener, unix_stream and unix_datagram (issue 16). Addresses come
// from socket_address::unix_path("/path") ("@name" for the abstract namespace). What every
// stream, listener and datagram socket offers is in net/socket.hpp.

#include <utility>

#include "blitz/net/socket.hpp"

namespace blitz::net {

class unix_stream : public stream_socket {
public:
    using stream_socket::stream_socket;
    // Connects to a listening socket at `addr`.
    static task<io_result<unix_stream>> connect(socket_address addr);
    // A connected pair (socketpair), both registered with the calling task's runtime.
    static io_result<std::pair<unix_stream, unix_stream>> pair();
};

// unix_listener::bind(socket_address::unix_path(p)); the path must not exist (remove it first,
// as with any Unix socket).
using unix_listener = basic_listener<unix_stream>;

class unix_datagram : public datagram_socket {
public:
    using datagram_socket::datagram_socket;
    // Bound to `addr`.
    static io_result<unix_datagram> bind(const socket_address& addr);
    // Not bound (it can send; replies need a bound peer).
    static io_result<unix_datagram> unbound();
    static io_result<std::pair<unix_datagram, unix_datagram>> pair();
};

}  // namespace blitz::net
