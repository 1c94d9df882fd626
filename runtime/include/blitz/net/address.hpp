// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::net::socket_address: an IPv4, IPv6 or Unix-domain socket address.

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "blitz/net/io_result.hpp"

namespace blitz::net {

class socket_address {
public:
    socket_address() noexcept = default;
    // From what the kernel filled in (accept, getsockname, recvfrom).
    socket_address(const sockaddr* sa, socklen_t len) noexcept;

    // "127.0.0.1:8080", "[::1]:8080", "0.0.0.0:0" (numeric hosts only: resolving names
    // blocks, so it belongs on the blocking pool). Errors: std::errc::invalid_argument.
    static io_result<socket_address> parse(std::string_view text);
    // A numeric host and a port: ipv4("127.0.0.1", 80), also "::1".
    static io_result<socket_address> ip(std::string_view host, std::uint16_t port);
    // A Unix-domain path; a leading '@' names an abstract socket. Errors:
    // std::errc::filename_too_long.
    static io_result<socket_address> unix_path(std::string_view path);

    int family() const noexcept { return storage_.ss_family; }
    bool is_ipv4() const noexcept { return family() == AF_INET; }
    bool is_ipv6() const noexcept { return family() == AF_INET6; }
    bool is_unix() const noexcept { return family() == AF_UNIX; }
    // The port (IP addresses), 0 otherwise.
    std::uint16_t port() const noexcept;
    // "127.0.0.1:8080", "[::1]:8080", a Unix path, or "(unnamed)".
    std::string to_string() const;

    const sockaddr* data() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
    sockaddr* data() noexcept { return reinterpret_cast<sockaddr*>(&storage_); }
    socklen_t size() const noexcept { return len_; }
    void set_size(socklen_t n) noexcept { len_ = n; }
    static constexpr socklen_t capacity = sizeof(sockaddr_storage);

    friend bool operator==(const socket_address& a, const socket_address& b) noexcept;

private:
    sockaddr_storage storage_{};
    socklen_t len_ = 0;
};

}  // namespace blitz::net
