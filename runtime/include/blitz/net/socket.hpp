// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// The socket families' shared parts (issue 16): stream_socket (TCP and Unix streams),
// basic_listener (their listeners) and datagram_socket (UDP and Unix datagrams).
//
// Every operation is readiness-based on both backends (INVARIANTS.md R1): the awaiter makes the
// syscall when the descriptor is ready and waits for readiness on EAGAIN; the kernel never
// holds a pointer into the caller's buffer. Two exceptions on io_uring with worker rings
// (config io_worker_rings, the default there): a stream's read is served by a multishot
// receive on the reading worker's ring into that ring's buffer pool, and the read copies out
// of the filled buffers (still no kernel pointer into the caller's buffer; bytes the kernel
// delivered wait with the stream for the next read, so read stays cancel-safe); a listener's
// accept is a multishot accept on the accepting worker's ring, whose connections wait with the
// listener for the next accept (and are closed with it). Cancel safety, as
// in Tokio: read, write, accept, send_to, recv_from, readable and writable are cancel-safe (dropped
// before completion, they consumed nothing); read_exact and write_all are not (bytes moved before
// the cancel are gone or sent). Errors are std::error_code values of the generic category (compare
// with std::errc::...); sends use MSG_NOSIGNAL, so a closed peer gives std::errc::broken_pipe,
// never SIGPIPE. Sockets are created and awaited inside tasks of a runtime with an I/O driver.
//
// read_owned and write_owned take an owned_buffer instead of a span: on io_uring they are
// completion operations (the kernel fills or drains the buffer while the task waits), on
// epoll readiness-based like the rest (see owned_io below).
//
// Thread-safety: one task reads and one task writes at a time (split() gives the two halves).

#include <sys/socket.h>

#include <cstddef>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

#include "blitz/buffer.hpp"
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
    blitz::detail::scheduled_io* sio = nullptr;  // streams: take bytes kept by R4 first
    blitz::detail::io_driver* driver = nullptr;  // streams: see io_span_attempt
    long attempt() const noexcept;
    io_result<std::size_t> finish(long r) const;
    // A stream read that got fewer bytes than asked emptied the socket's receive queue (TCP and
    // Unix streams copy until the queue is empty; TCP's urgent mark and Unix credential changes
    // under SO_PASSCRED, neither of which blitz uses, are the exceptions): io_op then drops the
    // readable bit. Not when the bytes came from the stream's queue (R4's kept bytes, a
    // multishot receive's buffers): the socket may hold more. Datagram sockets (sio null)
    // never: each datagram is a read of its own.
    bool drained(long r) const noexcept {
        return sio && from_socket && r > 0 && static_cast<std::size_t>(r) < n;
    }
    mutable bool from_socket = false;  // set by attempt: the result came from recv(2)
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
// read_pooled: see io_pooled_attempt. The buffer is handed over by finish.
struct pooled_recv_op {
    int fd;
    blitz::detail::scheduled_io* sio;
    blitz::detail::io_driver* driver;
    mutable pooled_buffer out{};
    mutable owned_buffer heap{};
    long attempt() const noexcept {
        return blitz::detail::io_pooled_attempt(*driver, sio, fd, out, heap);
    }
    io_result<pooled_buffer> finish(long r) const {
        if (r < 0) return blitz::detail::errno_code(r);
        return std::move(out);
    }
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
    blitz::detail::scheduled_io* sio = nullptr;
    blitz::detail::io_driver* driver = nullptr;  // see io_accept_attempt
    long attempt() const noexcept {
        return driver ? blitz::detail::io_accept_attempt(*driver, sio, fd) : accept_attempt(fd);
    }
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

// co_await s.read_owned(buf) / s.write_owned(buf): a receive into, or a send from, an owned
// buffer, giving back buf_result<io_result<size_t>>{result, buffer} (INVARIANTS.md R2). On io_uring
// it is a completion operation whose buffer and state live in the driver until the final
// completion, so the task may be aborted at any moment; on epoll the awaiter runs the same
// readiness loop as read and write, on the buffer it holds.
// Cancel safety: a receive abandoned after the kernel filled the buffer keeps those bytes for
// the stream's next read (R4), so read_owned is cancel-safe; an abandoned send may have sent
// its bytes, so write_owned is not (like write_all).
// Under blitz::timeout() on io_uring with config io_linked_timeouts the operation goes
// to the kernel with a linked timeout at the same deadline: the kernel ends it on time, and the
// caller still sees timed_out() (the awaiter ignores the kernel's ECANCELED once the deadline
// has passed and lets the timeout's timer drop it).
// Thread-safety: one task.
template <blitz::detail::io_op_kind Kind>
class owned_io : private ::blitz::detail::ready_hook {
    static constexpr bool is_recv = Kind == blitz::detail::io_op_kind::recv;
    using fallback_op = std::conditional_t<is_recv, ops::recv_op, ops::send_op>;

public:
    using result_type = buf_result<io_result<std::size_t>>;

    owned_io(const blitz::detail::io_object& o, owned_buffer buf) noexcept
        : obj_(&o), buf_(std::move(buf)) {}
    owned_io(const owned_io&) = delete;
    owned_io& operator=(const owned_io&) = delete;
    ~owned_io() {
        if (op_) blitz::detail::io_op_abandon(*driver_, op_);
    }

    bool await_ready() {
        blitz::detail::scheduled_io* sio = obj_->sio();
        if (!sio) {
            result_ = -EBADF;  // a closed or moved-from socket
            return true;
        }
        driver_ = obj_->driver();
        if (!blitz::detail::io_completion_mode(*driver_)) {
            if constexpr (is_recv) {
                fallback_.emplace(*obj_, blitz::detail::io_direction::read,
                                  fallback_op{obj_->fd(), buf_.data(), buf_.capacity(), sio},
                                  false);
            } else {
                fallback_.emplace(*obj_, blitz::detail::io_direction::write,
                                  fallback_op{obj_->fd(), buf_.data(), buf_.size(), nullptr}, true);
            }
            return fallback_->await_ready();
        }
        if constexpr (is_recv) {
            if (const long k = blitz::detail::io_take_unread(sio, buf_.data(), buf_.capacity());
                k > 0) {
                result_ = k;
                blitz::detail::coop_spend();
                return true;
            }
        }
        coop_yield_ = blitz::detail::coop_exhausted();
        return false;
    }
    bool await_suspend(std::coroutine_handle<> h) {
        if (fallback_) return fallback_->await_suspend(h);
        task_ = blitz::detail::suspend_current(h, &ready, this, &describe);
        if (coop_yield_) {
            blitz::detail::mark_yielded(task_);  // back of the ring; the start runs on return
            return true;
        }
        return start();
    }
    result_type await_resume() {
        if (fallback_) {
            io_result<std::size_t> r = fallback_->await_resume();
            if constexpr (is_recv) buf_.resize(r ? *r : 0);
            return {std::move(r), std::move(buf_)};
        }
        if (op_) {
            result_ = blitz::detail::io_op_finish(*driver_, std::exchange(op_, nullptr), buf_);
            blitz::detail::coop_spend();
        }
        if constexpr (is_recv) buf_.resize(result_ > 0 ? static_cast<std::size_t>(result_) : 0);
        if (result_ < 0) return {blitz::detail::errno_code(result_), std::move(buf_)};
        return {static_cast<std::size_t>(result_), std::move(buf_)};
    }

private:
    // Starts the operation; true when the task must wait for it, false when it ended at once
    // (bytes kept from an abandoned receive; or ECANCELED: the runtime or the socket closes).
    bool start() {
        blitz::waker w = task_->make_waker();
        op_ = blitz::detail::io_op_start(*driver_, obj_->sio(), Kind, buf_, w);
        if (!op_) {
            result_ = -ECANCELED;
            return false;
        }
        return !blitz::detail::io_op_done(op_);
    }
    static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
        [[maybe_unused]] const auto* a = static_cast<const owned_io*>(p);
        out.kind = is_recv ? "recv" : "send";
        out.fd = a->obj_->fd();
    }
    static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
        auto* a = const_cast<owned_io*>(static_cast<const owned_io*>(p));
        if (a->coop_yield_) {
            a->coop_yield_ = false;
            try {
                return !a->start();
            } catch (...) {
                a->result_ = -ENOMEM;
                return true;
            }
        }
        // An operation its linked timeout ended stays pending: the timeout drops it.
        return a->op_ && blitz::detail::io_op_done(a->op_) && !blitz::detail::io_op_expired(a->op_);
    }

    const blitz::detail::io_object* obj_;
    blitz::detail::io_driver* driver_ = nullptr;
    owned_buffer buf_;
    blitz::detail::io_op_state* op_ = nullptr;
    long result_ = 0;
    bool coop_yield_ = false;
    blitz::detail::task_header* task_ = nullptr;
    std::optional<blitz::detail::io_op<fallback_op>> fallback_;
};
using read_owned_op = owned_io<blitz::detail::io_op_kind::recv>;
using write_owned_op = owned_io<blitz::detail::io_op_kind::send>;

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
    read_owned_op read_owned(owned_buffer buf) noexcept;
    blitz::detail::io_op<ops::pooled_recv_op> read_pooled() noexcept;
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
    write_owned_op write_owned(owned_buffer buf) noexcept;
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
        return {io_,
                blitz::detail::io_direction::read,
                {io_.fd(), data, n, io_.sio(), io_.driver()},
                io_.driver() && blitz::detail::io_speculative_reads(*io_.driver())};
    }
    // co_await s.read_owned(std::move(buf)) -> buf_result<io_result<size_t>>: receives up to
    // buf.capacity() bytes into the buffer (its size becomes the count; 0 at end of stream)
    // and gives it back. Cancel-safe (see owned_io).
    read_owned_op read_owned(owned_buffer buf) noexcept { return {io_, std::move(buf)}; }
    // co_await s.read_pooled() -> io_result<pooled_buffer>: the next bytes of the stream in a
    // buffer of the runtime's pool (empty at end of stream). On io_uring the first call arms
    // one multishot receive on a provided-buffer ring (config io_pool_buffers): the kernel
    // fills pool buffers as data arrives and they wait in the stream's queue (at most
    // io_pool_queue, then the receive pauses until the queue drains), so no buffer is pinned
    // while the connection is idle; -ENOBUFS (the ring ran dry) ends the receive and the next
    // read re-arms it, or reads into a heap buffer while no pool buffer is free. On epoll it is
    // a readiness read into a heap buffer of the pool's size. Cancel-safe: an abandoned call
    // took nothing, and the queued buffers stay for the next read of any kind (read and
    // read_owned take them first, in order). Give buffers back promptly: each one held is
    // one fewer for every connection of the runtime.
    blitz::detail::io_op<ops::pooled_recv_op> read_pooled() noexcept {
        return {io_, blitz::detail::io_direction::read,
                ops::pooled_recv_op{io_.fd(), io_.sio(), io_.driver()}, true};
    }
    // co_await s.write_owned(std::move(buf)) -> buf_result<io_result<size_t>>: sends the
    // buffer's bytes (at least one on success) and gives it back. Not cancel-safe.
    write_owned_op write_owned(owned_buffer buf) noexcept { return {io_, std::move(buf)}; }
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
inline blitz::detail::io_op<ops::pooled_recv_op> read_half::read_pooled() noexcept {
    return s_->read_pooled();
}
inline task<io_result<void>> read_half::read_exact(std::span<std::byte> buf) {
    return s_->read_exact(buf);
}
inline auto read_half::readable() noexcept { return s_->readable(); }
inline read_owned_op read_half::read_owned(owned_buffer buf) noexcept {
    return s_->read_owned(std::move(buf));
}
inline write_owned_op write_half::write_owned(owned_buffer buf) noexcept {
    return s_->write_owned(std::move(buf));
}
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
    basic_listener& operator=(basic_listener&& o) noexcept {
        if (this != &o) {
            close();
            io_ = std::move(o.io_);
        }
        return *this;
    }
    ~basic_listener() { close(); }

    // socket, SO_REUSEADDR (IP), bind, listen; registered with the calling task's runtime.
    // Port 0 picks a free port (see local_addr).
    static io_result<basic_listener> bind(const socket_address& addr, int backlog = 1024);

    // co_await l.accept() -> io_result<Stream> (its peer_addr() says who connected). Several
    // tasks may accept on one listener at once. Cancel-safe: a connection leaves the kernel's
    // queue only in a completing accept.
    blitz::detail::io_op<ops::accept_op<Stream>> accept() noexcept {
        return {io_,
                blitz::detail::io_direction::read,
                {io_.fd(), io_.sio(), io_.driver()},
                io_.driver() && blitz::detail::io_speculative_reads(*io_.driver())};
    }
    io_result<socket_address> local_addr() const { return detail::name_of(io_.fd(), false); }
    int native_handle() const noexcept { return io_.fd(); }
    // Stops listening at once (new connections are refused from here on), then closes. The
    // shutdown matters on io_uring, where the descriptor's poll keeps the socket open until its
    // removal completes: a plain close would let connections queue meanwhile.
    void close() noexcept {
        if (io_.valid()) ::shutdown(io_.fd(), SHUT_RD);
        io_.close();
    }

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
