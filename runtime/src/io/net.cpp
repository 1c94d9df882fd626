// SPDX-License-Identifier: MIT
// The socket types of blitz/net: addresses, TCP streams and listeners over the I/O driver.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <optional>
#include <system_error>
#include <vector>

#include "blitz/net/tcp.hpp"
#include "blitz/net/udp.hpp"
#include "blitz/net/unix.hpp"
#include "io/io_driver.hpp"

namespace blitz {
namespace detail {

io_object::io_object(int fd) : fd_(fd) {
    try {
        // Accepted and blitz-made sockets are non-blocking already: one syscall, not two.
        const int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)) {
            throw std::system_error(errno, std::generic_category(), "blitz: fcntl(O_NONBLOCK)");
        }
        io_driver& d = current_io();
        sio_ = io_register(d, fd);
        driver_ = io_share(d);
    } catch (...) {
        ::close(fd);
        fd_ = -1;
        throw;
    }
}

void io_object::close() noexcept {
    if (fd_ < 0) return;
    io_close(*driver_, sio_, fd_);  // deregisters, then closes, after the last operation
    fd_ = -1;
    sio_ = nullptr;
    driver_.reset();
}

}  // namespace detail

namespace net {

// ---- errors ----

namespace {
class net_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "blitz.net"; }
    std::string message(int c) const override {
        return c == static_cast<int>(net_errc::unexpected_eof) ? "unexpected end of stream"
                                                               : "unknown blitz.net error";
    }
};

std::error_code last_error() noexcept { return {errno, std::generic_category()}; }
}  // namespace

const std::error_category& net_category() noexcept {
    static const net_category_impl c;
    return c;
}

// ---- socket_address ----

socket_address::socket_address(const sockaddr* sa, socklen_t len) noexcept {
    if (len > capacity) len = capacity;
    std::memcpy(&storage_, sa, len);
    len_ = len;
}

io_result<socket_address> socket_address::ip(std::string_view host, std::uint16_t port) {
    socket_address a;
    const std::string h(host);
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage_);
    if (inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        a.len_ = sizeof(sockaddr_in);
        return a;
    }
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage_);
    if (inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        a.len_ = sizeof(sockaddr_in6);
        return a;
    }
    return std::make_error_code(std::errc::invalid_argument);
}

io_result<socket_address> socket_address::parse(std::string_view text) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::make_error_code(std::errc::invalid_argument);
    std::string_view host = text.substr(0, colon), port_text = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
        return std::make_error_code(std::errc::invalid_argument);  // IPv6 needs brackets
    }
    unsigned port = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535 ||
        port_text.empty()) {
        return std::make_error_code(std::errc::invalid_argument);
    }
    return ip(host, static_cast<std::uint16_t>(port));
}

io_result<socket_address> socket_address::unix_path(std::string_view path) {
    socket_address a;
    auto* un = reinterpret_cast<sockaddr_un*>(&a.storage_);
    if (path.size() >= sizeof(un->sun_path)) {
        return std::make_error_code(std::errc::filename_too_long);
    }
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.data(), path.size());
    if (!path.empty() && path.front() == '@') {
        un->sun_path[0] = '\0';  // abstract: no terminator counted
        a.len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
    } else {
        a.len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
    }
    return a;
}

std::uint16_t socket_address::port() const noexcept {
    if (is_ipv4()) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
    if (is_ipv6()) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
    return 0;
}

std::string socket_address::to_string() const {
    char buf[INET6_ADDRSTRLEN] = {};
    if (is_ipv4()) {
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf,
                  sizeof buf);
        return std::string(buf) + ":" + std::to_string(port());
    }
    if (is_ipv6()) {
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf,
                  sizeof buf);
        return "[" + std::string(buf) + "]:" + std::to_string(port());
    }
    if (is_unix()) {
        const auto* un = reinterpret_cast<const sockaddr_un*>(&storage_);
        const std::size_t n =
            len_ > offsetof(sockaddr_un, sun_path) ? len_ - offsetof(sockaddr_un, sun_path) : 0;
        if (n == 0) return "(unnamed)";
        if (un->sun_path[0] == '\0') return "@" + std::string(un->sun_path + 1, n - 1);
        return std::string(un->sun_path, strnlen(un->sun_path, n));
    }
    return "(unnamed)";
}

bool operator==(const socket_address& a, const socket_address& b) noexcept {
    return a.len_ == b.len_ && std::memcmp(&a.storage_, &b.storage_, a.len_) == 0;
}

// ---- operations ----

namespace ops {

long recv_op::attempt() const noexcept {
    long r;
    if (driver) {
        r = blitz::detail::io_span_attempt(*driver, sio, fd, data, n, from_socket);
    } else {
        // Bytes an abandoned completion-mode receive got late come first (R4).
        from_socket = false;
        if (sio) {
            if (const long k = blitz::detail::io_take_unread(sio, data, n)) return k;
        }
        const ssize_t k = ::recv(fd, data, n, 0);
        from_socket = true;
        r = k < 0 ? -errno : k;
    }
#if BLITZ_FAULTS
    if (r == 0 && n > 0 && blitz::detail::fault_io_eof_as_error()) return -ECONNRESET;  // O10
    if (r == -EAGAIN && from_socket && driver) {
        blitz::detail::fault_io_after_eagain(*driver, sio);  // O16's window
    }
#endif
    return r;
}
io_result<std::size_t> recv_op::finish(long r) const {
    if (r < 0) return blitz::detail::errno_code(r);
    return static_cast<std::size_t>(r);
}

long send_op::attempt() const noexcept {
    int flags = MSG_NOSIGNAL;
#if BLITZ_FAULTS
    if (blitz::detail::fault_io_no_msg_nosignal()) flags = 0;  // O9's control
#endif
    const ssize_t r =
        to ? ::sendto(fd, data, n, flags, to->data(), to->size()) : ::send(fd, data, n, flags);
    return r < 0 ? -errno : r;
}
io_result<std::size_t> send_op::finish(long r) const {
    if (r < 0) return blitz::detail::errno_code(r);
    return static_cast<std::size_t>(r);
}

long recv_from_op::attempt() const noexcept {
    socklen_t len = socket_address::capacity;
    const ssize_t r = ::recvfrom(fd, data, n, 0, from.data(), &len);
    if (r < 0) return -errno;
    from.set_size(len);
    return r;
}
io_result<datagram> recv_from_op::finish(long r) const {
    if (r < 0) return blitz::detail::errno_code(r);
    return datagram{static_cast<std::size_t>(r), from};
}

io_result<void> ready_op::finish(long r) const {
    if (r < 0) return blitz::detail::errno_code(r);
    return {};
}

long accept_attempt(int fd) noexcept {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    return c < 0 ? -errno : c;
}

}  // namespace ops

// ---- shared helpers ----

namespace detail {

int new_socket(const socket_address& addr, int type) noexcept {
    return ::socket(addr.family(), type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

io_result<void> set_option(int fd, int level, int name, int value) noexcept {
    if (::setsockopt(fd, level, name, &value, sizeof value) != 0) return last_error();
    return {};
}

io_result<socket_address> name_of(int fd, bool peer) {
    socket_address a;
    socklen_t len = socket_address::capacity;
    const int r = peer ? ::getpeername(fd, a.data(), &len) : ::getsockname(fd, a.data(), &len);
    if (r != 0) return last_error();
    a.set_size(len);
    return a;
}

io_result<int> listen_on(const socket_address& addr, int backlog) {
    const int fd = new_socket(addr, SOCK_STREAM);
    if (fd < 0) return last_error();
    const int one = 1;
    if ((!addr.is_unix() && ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) ||
        ::bind(fd, addr.data(), addr.size()) != 0 || ::listen(fd, backlog) != 0) {
        const std::error_code e = last_error();
        ::close(fd);
        return e;
    }
    return fd;
}

namespace {

// Starts a non-blocking connect of a fresh stream socket: the descriptor and whether the
// connect already finished, or an error.
io_result<std::pair<int, bool>> start_connect(const socket_address& addr) {
    const int fd = new_socket(addr, SOCK_STREAM);
    if (fd < 0) return last_error();
    if (::connect(fd, addr.data(), addr.size()) == 0) return std::pair<int, bool>{fd, true};
    const int err = errno;
    if (err == EINPROGRESS) return std::pair<int, bool>{fd, false};
    ::close(fd);
    return std::error_code(err, std::generic_category());
}

// After writability: the connect's outcome.
io_result<void> connect_outcome(int fd) {
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) return last_error();
    if (so_error != 0) return std::error_code(so_error, std::generic_category());
    return {};
}

template <class Stream>
task<io_result<Stream>> connect_stream(socket_address addr) {
    auto started = start_connect(addr);
    if (!started) co_return started.error();
    Stream s(started->first);  // registers (throws outside a runtime task)
    if (!started->second) {
        auto w = co_await s.writable();
        if (!w) co_return w.error();
        auto r = connect_outcome(s.native_handle());
        if (!r) co_return r.error();
    }
    co_return std::move(s);
}

template <class S>
io_result<std::pair<S, S>> socket_pair(int type) {
    int sv[2];
    if (::socketpair(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        return last_error();
    }
    std::optional<S> a;
    try {
        a.emplace(sv[0]);
    } catch (...) {
        ::close(sv[1]);  // sv[0] was closed by the failed registration
        throw;
    }
    S b(sv[1]);  // a failure closes sv[1], and a closes sv[0]
    return std::pair<S, S>{std::move(*a), std::move(b)};
}

template <class S>
io_result<S> bound_datagram(const socket_address& addr) {
    const int fd = new_socket(addr, SOCK_DGRAM);
    if (fd < 0) return last_error();
    if (::bind(fd, addr.data(), addr.size()) != 0) {
        const std::error_code e = last_error();
        ::close(fd);
        return e;
    }
    return S(fd);
}

}  // namespace
}  // namespace detail

// ---- streams ----

task<io_result<void>> stream_socket::read_exact(std::span<std::byte> buf) {
    std::size_t got = 0;
    while (got < buf.size()) {
        auto r = co_await read(buf.subspan(got));
        if (!r) co_return r.error();
        if (*r == 0) co_return make_error_code(net_errc::unexpected_eof);
        got += *r;
    }
    co_return io_result<void>{};
}

namespace detail {
namespace {

// write_all's batched sends (issue 44): up to this many bytes left to send go out as one SEND
// on the worker's own ring, copied into a buffer the operation owns (R2); a longer rest is sent
// by readiness-based writes, whose syscall copies it once (a copy of ours would be a second).
constexpr std::size_t send_copy_max = 64 * 1024;

// Each thread keeps the buffers of its finished batched sends for the next ones (up to
// send_cache_bytes), so a worker's write_all allocates only while its concurrent sends outgrow
// the cache, or to replace a buffer an abandoned send still holds.
constexpr std::size_t send_cache_bytes = 1024 * 1024;
struct send_cache {
    std::vector<owned_buffer> free;
    std::size_t bytes = 0;
};
thread_local send_cache tl_sends;

owned_buffer send_buffer(std::span<const std::byte> bytes) {
    owned_buffer b;
    send_cache& c = tl_sends;
    if (!c.free.empty() && c.free.back().capacity() >= bytes.size()) {
        b = std::move(c.free.back());
        c.free.pop_back();
        c.bytes -= b.capacity();
    } else {
        // Powers of two from 1 KiB, so sends of mixed sizes reuse each other's buffers.
        b = owned_buffer(std::bit_ceil(std::max<std::size_t>(bytes.size(), 1024)));
    }
    std::memcpy(b.data(), bytes.data(), bytes.size());
    b.resize(bytes.size());
    return b;
}

void send_buffer_back(owned_buffer b) noexcept {
    send_cache& c = tl_sends;
    if (b.capacity() == 0 || c.bytes + b.capacity() > send_cache_bytes) return;
    try {
        c.free.push_back(std::move(b));
        c.bytes += c.free.back().capacity();
    } catch (const std::bad_alloc&) {  // the buffer goes: a cache that cannot grow stays small
    }
}

}  // namespace
}  // namespace detail

task<io_result<void>> stream_socket::write_all(std::span<const std::byte> buf) {
    std::size_t put = 0;
    while (put < buf.size()) {
        const std::span<const std::byte> rest = buf.subspan(put);
        if (const ::blitz::detail::io_driver* d = io_.driver();
            d && rest.size() <= detail::send_copy_max && d->batched_sends()) {
            // A SEND staged on this worker's ring (MSG_WAITALL: the kernel sends it all or
            // fails), submitted with the tick's other operations. The task waits for its
            // completion, so write_all still returns once the kernel has every byte.
            auto [r, back] = co_await write_owned(detail::send_buffer(rest));
            detail::send_buffer_back(std::move(back));
            if (r) {
                put += *r;
                continue;
            }
            if (r.error() != std::errc::resource_unavailable_try_again) co_return r.error();
            // EAGAIN from the kernel: a readiness-based write below instead.
        }
        auto r = co_await write(rest);
        if (!r) co_return r.error();
        put += *r;
    }
    co_return io_result<void>{};
}

io_result<void> stream_socket::shutdown(shutdown_how how) noexcept {
    if (::shutdown(io_.fd(), static_cast<int>(how)) != 0) return last_error();
    return {};
}

task<io_result<tcp_stream>> tcp_stream::connect(socket_address addr) {
    return detail::connect_stream<tcp_stream>(std::move(addr));
}
io_result<void> tcp_stream::set_nodelay(bool on) noexcept {
    return detail::set_option(io_.fd(), IPPROTO_TCP, TCP_NODELAY, on ? 1 : 0);
}
io_result<void> tcp_stream::set_keepalive(bool on) noexcept {
    return detail::set_option(io_.fd(), SOL_SOCKET, SO_KEEPALIVE, on ? 1 : 0);
}
io_result<void> tcp_stream::set_linger(std::optional<std::chrono::seconds> t) noexcept {
    linger l{};
    l.l_onoff = t.has_value();
    l.l_linger = t ? static_cast<int>(t->count()) : 0;
    if (::setsockopt(io_.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof l) != 0) return last_error();
    return {};
}

io_result<void> tcp_stream::set_busy_poll(std::chrono::microseconds t) noexcept {
    if (t.count() < 0 || t.count() > INT_MAX) {
        return std::make_error_code(std::errc::invalid_argument);
    }
    return detail::set_option(io_.fd(), SOL_SOCKET, SO_BUSY_POLL, static_cast<int>(t.count()));
}
io_result<std::chrono::microseconds> tcp_stream::busy_poll() const noexcept {
    int v = 0;
    socklen_t len = sizeof v;
    if (::getsockopt(io_.fd(), SOL_SOCKET, SO_BUSY_POLL, &v, &len) != 0) return last_error();
    return std::chrono::microseconds(v);
}

task<io_result<unix_stream>> unix_stream::connect(socket_address addr) {
    return detail::connect_stream<unix_stream>(std::move(addr));
}
io_result<std::pair<unix_stream, unix_stream>> unix_stream::pair() {
    return detail::socket_pair<unix_stream>(SOCK_STREAM);
}

// ---- datagrams ----

io_result<void> datagram_socket::connect(const socket_address& peer) noexcept {
    if (::connect(io_.fd(), peer.data(), peer.size()) != 0) return last_error();
    return {};
}

io_result<udp_socket> udp_socket::bind(const socket_address& addr) {
    return detail::bound_datagram<udp_socket>(addr);
}
io_result<void> udp_socket::set_broadcast(bool on) noexcept {
    return detail::set_option(io_.fd(), SOL_SOCKET, SO_BROADCAST, on ? 1 : 0);
}

io_result<unix_datagram> unix_datagram::bind(const socket_address& addr) {
    return detail::bound_datagram<unix_datagram>(addr);
}
io_result<unix_datagram> unix_datagram::unbound() {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return last_error();
    return unix_datagram(fd);
}
io_result<std::pair<unix_datagram, unix_datagram>> unix_datagram::pair() {
    return detail::socket_pair<unix_datagram>(SOCK_DGRAM);
}

}  // namespace net
}  // namespace blitz
