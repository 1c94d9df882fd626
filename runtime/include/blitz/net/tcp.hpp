// SPDX-License-Identifier: MIT
#pragma once
// TCP: blitz::net::tcp_listener and blitz::net::tcp_stream (issue 16).
//
// Every operation is readiness-based on both backends (IO.md 7.3 R1): the awaiter makes the
// syscall when the descriptor is ready and waits for readiness on EAGAIN; the kernel never
// holds a pointer into the caller's buffer. Cancel safety, as in Tokio: read, write, accept,
// readable and writable are cancel-safe (dropped before completion, they consumed nothing);
// read_exact and write_all are not (bytes moved before the cancel are gone or sent).
// Errors are std::error_code values of the generic category (compare with std::errc::...);
// writes use MSG_NOSIGNAL, so a closed peer gives std::errc::broken_pipe, never SIGPIPE.

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <utility>

#include "blitz/detail/io_op.hpp"
#include "blitz/net/address.hpp"
#include "blitz/net/io_result.hpp"
#include "blitz/task.hpp"

namespace blitz::net {

// What read_exact reports when the stream ends before the buffer is full.
enum class net_errc { unexpected_eof = 1 };
const std::error_category& net_category() noexcept;
inline std::error_code make_error_code(net_errc e) noexcept {
    return {static_cast<int>(e), net_category()};
}

enum class shutdown_how { read = SHUT_RD, write = SHUT_WR, both = SHUT_RDWR };

namespace ops {
struct recv_op {
    int fd;
    void* data;
    std::size_t n;
    long attempt() const noexcept;
    io_result<std::size_t> finish(long r) const;
};
struct send_op {
    int fd;
    const void* data;
    std::size_t n;
    long attempt() const noexcept;
    io_result<std::size_t> finish(long r) const;
};
struct ready_op {  // readable() / writable(): no syscall, readiness only
    long attempt() const noexcept { return 0; }
    io_result<void> finish(long r) const;
};
}  // namespace ops

class tcp_stream;

class tcp_stream {
public:
    tcp_stream() noexcept = default;
    // Takes a connected, open socket descriptor (e.g. from accept4) and registers it with the
    // calling task's runtime.
    explicit tcp_stream(int fd) : io_(fd) {}
    tcp_stream(tcp_stream&&) noexcept = default;
    tcp_stream& operator=(tcp_stream&&) noexcept = default;

    // Connects to `addr` (non-blocking connect, then waits for writability and SO_ERROR).
    static task<io_result<tcp_stream>> connect(socket_address addr);

    // co_await s.read(buf) -> io_result<size_t>: at least one byte, or 0 at end of stream.
    // Cancel-safe.
    blitz::detail::io_op<ops::recv_op> read(std::span<std::byte> buf) noexcept {
        return {io_, blitz::detail::io_direction::read, {io_.fd(), buf.data(), buf.size()}, false};
    }
    blitz::detail::io_op<ops::recv_op> read(void* data, std::size_t n) noexcept {
        return {io_, blitz::detail::io_direction::read, {io_.fd(), data, n}, false};
    }
    // co_await s.write(buf) -> io_result<size_t>: at least one byte written. Cancel-safe.
    blitz::detail::io_op<ops::send_op> write(std::span<const std::byte> buf) noexcept {
        return {io_, blitz::detail::io_direction::write, {io_.fd(), buf.data(), buf.size()}, true};
    }
    blitz::detail::io_op<ops::send_op> write(const void* data, std::size_t n) noexcept {
        return {io_, blitz::detail::io_direction::write, {io_.fd(), data, n}, true};
    }
    // Fills `buf` completely; net_errc::unexpected_eof if the stream ends first. Not
    // cancel-safe.
    task<io_result<void>> read_exact(std::span<std::byte> buf);
    // Writes all of `buf`. Not cancel-safe.
    task<io_result<void>> write_all(std::span<const std::byte> buf);
    // Waits until a read (or write) would not block. Cancel-safe.
    blitz::detail::io_op<ops::ready_op> readable() noexcept {
        return {io_, blitz::detail::io_direction::read, {}, false};
    }
    blitz::detail::io_op<ops::ready_op> writable() noexcept {
        return {io_, blitz::detail::io_direction::write, {}, false};
    }

    io_result<void> shutdown(shutdown_how how) noexcept;
    io_result<void> set_nodelay(bool on) noexcept;
    io_result<void> set_keepalive(bool on) noexcept;
    // SO_LINGER: nullopt turns it off; zero makes close() send a reset.
    io_result<void> set_linger(std::optional<std::chrono::seconds> t) noexcept;
    io_result<socket_address> local_addr() const;
    io_result<socket_address> peer_addr() const;

    int native_handle() const noexcept { return io_.fd(); }
    bool is_open() const noexcept { return io_.valid(); }
    // Closes now (also done by the destructor).
    void close() noexcept { io_.close(); }

private:
    blitz::detail::io_object io_;
};

namespace ops {
struct accept_op {
    int fd;
    socket_address* peer;
    long attempt() const noexcept;
    io_result<tcp_stream> finish(long r) const;
};
}  // namespace ops

class tcp_listener {
public:
    tcp_listener() noexcept = default;
    tcp_listener(tcp_listener&&) noexcept = default;
    tcp_listener& operator=(tcp_listener&&) noexcept = default;

    // socket, SO_REUSEADDR, bind, listen; registered with the calling task's runtime. Port 0
    // picks a free port (see local_addr).
    static io_result<tcp_listener> bind(const socket_address& addr, int backlog = 1024);

    // co_await l.accept() -> io_result<tcp_stream>; the peer's address is in last_peer().
    // Cancel-safe: a connection is taken from the kernel only by a completing accept.
    blitz::detail::io_op<ops::accept_op> accept() noexcept {
        return {io_, blitz::detail::io_direction::read, {io_.fd(), &peer_}, false};
    }
    // The address of the connection the last completed accept returned.
    const socket_address& last_peer() const noexcept { return peer_; }
    io_result<socket_address> local_addr() const;
    int native_handle() const noexcept { return io_.fd(); }
    void close() noexcept { io_.close(); }

private:
    explicit tcp_listener(int fd) : io_(fd) {}
    blitz::detail::io_object io_;
    socket_address peer_;
};

}  // namespace blitz::net

template <>
struct std::is_error_code_enum<blitz::net::net_errc> : std::true_type {};
