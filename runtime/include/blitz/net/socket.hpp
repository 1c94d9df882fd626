// SPDX-License-Identifier: MIT
#pragma once
// The socket families' shared parts (issue 16): stream_socket (TCP and Unix streams),
// basic_listener (their listeners) and datagram_socket (UDP and Unix datagrams).
//
// Every operation is readiness-based on both backends (IO.md 7.3 R1): the awaiter makes the
// syscall when the descriptor is ready and waits for readiness on EAGAIN; the kernel never
// holds a pointer into the caller's buffer. Cancel safety, as in Tokio: read, write, accept,
// send_to, recv_from, readable and writable are cancel-safe (dropped before completion, they
// consumed nothing); read_exact and write_all are not (bytes moved before the cancel are gone
// or sent). Errors are std::error_code values of the generic category (compare with
// std::errc::...); sends use MSG_NOSIGNAL, so a closed peer gives std::errc::broken_pipe, never
// SIGPIPE. Sockets are created and awaited inside tasks of a runtime with an I/O driver.
//
// Thread-safety: one task reads and one task writes at a time (split() gives the two halves).

#include <sys/socket.h>

#include <cstddef>
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

// One datagram received: its size (the part that fitted the buffer) and its sender.
struct datagram {
    std::size_t size = 0;
    socket_address from;
};

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
    const socket_address* to;  // null: the connected peer
    long attempt() const noexcept;
    io_result<std::size_t> finish(long r) const;
};
struct recv_from_op {
    int fd;
    void* data;
    std::size_t n;
    mutable socket_address from;  // this receive's own (several may wait on one socket)
    long attempt() const noexcept;
    io_result<datagram> finish(long r) const;
};
struct ready_op {  // readable() / writable(): readiness only
    long attempt() const noexcept { return 0; }
    io_result<void> finish(long r) const;
};
// accept4; finish registers the new descriptor as a Stream. Nothing is shared between accepts,
// so several tasks may accept on one listener at once.
long accept_attempt(int fd) noexcept;
template <class Stream>
struct accept_op {
    int fd;
    long attempt() const noexcept { return accept_attempt(fd); }
    io_result<Stream> finish(long r) const {
        if (r < 0) return blitz::detail::errno_code(r);
        try {
            return Stream(static_cast<int>(r));
        } catch (const std::system_error& e) {
            return e.code();
        }
    }
};
}  // namespace ops

namespace detail {
// The descriptor's local or peer address.
io_result<socket_address> name_of(int fd, bool peer);
// A new non-blocking, close-on-exec socket of `addr`'s family; -1 with errno set on failure.
int new_socket(const socket_address& addr, int type) noexcept;
io_result<void> set_option(int fd, int level, int name, int value) noexcept;
}  // namespace detail

class stream_socket;

// The reading or the writing half of a stream, borrowed from it (split()): one task may read
// while another writes. The stream must outlive its halves.
class read_half {
public:
    explicit read_half(stream_socket& s) noexcept : s_(&s) {}
    auto read(std::span<std::byte> buf) noexcept;
    auto read(void* data, std::size_t n) noexcept;
    task<io_result<void>> read_exact(std::span<std::byte> buf);
    auto readable() noexcept;

private:
    stream_socket* s_;
};
class write_half {
public:
    explicit write_half(stream_socket& s) noexcept : s_(&s) {}
    auto write(std::span<const std::byte> buf) noexcept;
    auto write(const void* data, std::size_t n) noexcept;
    task<io_result<void>> write_all(std::span<const std::byte> buf);
    auto writable() noexcept;
    io_result<void> shutdown() noexcept;

private:
    stream_socket* s_;
};

// A connected stream socket: TCP or Unix.
class stream_socket {
public:
    stream_socket() noexcept = default;
    // Takes a connected, open stream socket descriptor and registers it with the calling
    // task's runtime.
    explicit stream_socket(int fd) : io_(fd) {}
    stream_socket(stream_socket&&) noexcept = default;
    stream_socket& operator=(stream_socket&&) noexcept = default;

    // co_await s.read(buf) -> io_result<size_t>: at least one byte, or 0 at end of stream.
    blitz::detail::io_op<ops::recv_op> read(std::span<std::byte> buf) noexcept {
        return read(buf.data(), buf.size());
    }
    blitz::detail::io_op<ops::recv_op> read(void* data, std::size_t n) noexcept {
        return {io_, blitz::detail::io_direction::read, {io_.fd(), data, n}, false};
    }
    // co_await s.write(buf) -> io_result<size_t>: at least one byte written.
    blitz::detail::io_op<ops::send_op> write(std::span<const std::byte> buf) noexcept {
        return write(buf.data(), buf.size());
    }
    blitz::detail::io_op<ops::send_op> write(const void* data, std::size_t n) noexcept {
        return {io_, blitz::detail::io_direction::write, {io_.fd(), data, n, nullptr}, true};
    }
    // Fills `buf` completely; net_errc::unexpected_eof if the stream ends first.
    task<io_result<void>> read_exact(std::span<std::byte> buf);
    // Writes all of `buf`.
    task<io_result<void>> write_all(std::span<const std::byte> buf);
    // Waits until a read (or a write) would not block.
    blitz::detail::io_op<ops::ready_op> readable() noexcept {
        return {io_, blitz::detail::io_direction::read, {}, false};
    }
    blitz::detail::io_op<ops::ready_op> writable() noexcept {
        return {io_, blitz::detail::io_direction::write, {}, false};
    }
    // The two halves, for one reading task and one writing task.
    std::pair<read_half, write_half> split() noexcept {
        return {read_half(*this), write_half(*this)};
    }

    io_result<void> shutdown(shutdown_how how) noexcept;
    io_result<socket_address> local_addr() const { return detail::name_of(io_.fd(), false); }
    io_result<socket_address> peer_addr() const { return detail::name_of(io_.fd(), true); }
    int native_handle() const noexcept { return io_.fd(); }
    bool is_open() const noexcept { return io_.valid(); }
    // Closes now (the destructor does it too). No operation may be pending.
    void close() noexcept { io_.close(); }

protected:
    blitz::detail::io_object io_;
};

inline auto read_half::read(std::span<std::byte> buf) noexcept { return s_->read(buf); }
inline auto read_half::read(void* data, std::size_t n) noexcept { return s_->read(data, n); }
inline task<io_result<void>> read_half::read_exact(std::span<std::byte> buf) {
    return s_->read_exact(buf);
}
inline auto read_half::readable() noexcept { return s_->readable(); }
inline auto write_half::write(std::span<const std::byte> buf) noexcept { return s_->write(buf); }
inline auto write_half::write(const void* data, std::size_t n) noexcept {
    return s_->write(data, n);
}
inline task<io_result<void>> write_half::write_all(std::span<const std::byte> buf) {
    return s_->write_all(buf);
}
inline auto write_half::writable() noexcept { return s_->writable(); }
inline io_result<void> write_half::shutdown() noexcept { return s_->shutdown(shutdown_how::write); }

// A listening socket whose accept() gives Stream (tcp_stream, unix_stream).
template <class Stream>
class basic_listener {
public:
    basic_listener() noexcept = default;
    basic_listener(basic_listener&&) noexcept = default;
    basic_listener& operator=(basic_listener&&) noexcept = default;

    // socket, SO_REUSEADDR (IP), bind, listen; registered with the calling task's runtime.
    // Port 0 picks a free port (see local_addr).
    static io_result<basic_listener> bind(const socket_address& addr, int backlog = 1024);

    // co_await l.accept() -> io_result<Stream> (its peer_addr() says who connected). Several
    // tasks may accept on one listener at once. Cancel-safe: a connection leaves the kernel's
    // queue only in a completing accept.
    blitz::detail::io_op<ops::accept_op<Stream>> accept() noexcept {
        return {io_, blitz::detail::io_direction::read, {io_.fd()}, false};
    }
    io_result<socket_address> local_addr() const { return detail::name_of(io_.fd(), false); }
    int native_handle() const noexcept { return io_.fd(); }
    void close() noexcept { io_.close(); }

private:
    explicit basic_listener(int fd) : io_(fd) {}
    blitz::detail::io_object io_;
};

namespace detail {
// socket + options + bind + listen; the descriptor, or an error.
io_result<int> listen_on(const socket_address& addr, int backlog);
}  // namespace detail

template <class Stream>
io_result<basic_listener<Stream>> basic_listener<Stream>::bind(const socket_address& addr,
                                                               int backlog) {
    auto fd = detail::listen_on(addr, backlog);
    if (!fd) return fd.error();
    return basic_listener(*fd);
}

// A datagram socket: UDP or Unix.
class datagram_socket {
public:
    datagram_socket() noexcept = default;
    explicit datagram_socket(int fd) : io_(fd) {}
    datagram_socket(datagram_socket&&) noexcept = default;
    datagram_socket& operator=(datagram_socket&&) noexcept = default;

    // Sets the default peer (send/recv then use it, and only its datagrams arrive).
    io_result<void> connect(const socket_address& peer) noexcept;
    // co_await s.send_to(buf, addr) -> io_result<size_t>.
    blitz::detail::io_op<ops::send_op> send_to(std::span<const std::byte> buf,
                                               const socket_address& to) noexcept {
        return {
            io_, blitz::detail::io_direction::write, {io_.fd(), buf.data(), buf.size(), &to}, true};
    }
    // co_await s.recv_from(buf) -> io_result<datagram>: one datagram (truncated to the buffer).
    blitz::detail::io_op<ops::recv_from_op> recv_from(std::span<std::byte> buf) noexcept {
        return {
            io_, blitz::detail::io_direction::read, {io_.fd(), buf.data(), buf.size(), {}}, false};
    }
    // Connected sockets: to and from the peer.
    blitz::detail::io_op<ops::send_op> send(std::span<const std::byte> buf) noexcept {
        return {io_,
                blitz::detail::io_direction::write,
                {io_.fd(), buf.data(), buf.size(), nullptr},
                true};
    }
    blitz::detail::io_op<ops::recv_op> recv(std::span<std::byte> buf) noexcept {
        return {io_, blitz::detail::io_direction::read, {io_.fd(), buf.data(), buf.size()}, false};
    }
    io_result<socket_address> local_addr() const { return detail::name_of(io_.fd(), false); }
    io_result<socket_address> peer_addr() const { return detail::name_of(io_.fd(), true); }
    int native_handle() const noexcept { return io_.fd(); }
    void close() noexcept { io_.close(); }

protected:
    blitz::detail::io_object io_;
};

}  // namespace blitz::net

template <>
struct std::is_error_code_enum<blitz::net::net_errc> : std::true_type {};
