// SPDX-License-Identifier: MIT
#include "rt/inspect_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "blitz/config.hpp"
#include "blitz/detail/atomic.hpp"

namespace blitz::detail {

namespace {

// ---- the dump signal: (signal, eventfd) pairs the handler writes to ----

constexpr unsigned max_dump_listeners = 64;
// Each slot: 0 (free) or (signal << 32) | (eventfd + 1).
atomic<std::uint64_t> dump_listeners[max_dump_listeners];
std::mutex dump_signal_mutex;
struct installed_signal {
    int signo = 0;
    unsigned users = 0;
    struct sigaction previous{};
};
installed_signal dump_signals[8];

void on_dump_signal(int signo) {
    const int saved = errno;
    for (auto& slot : dump_listeners) {
        const std::uint64_t v = slot.load(std::memory_order_acquire);
        if (v == 0 || static_cast<int>(v >> 32) != signo) continue;
        const int fd = static_cast<int>(v & 0xFFFFFFFF) - 1;
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);  // async-signal-safe
    }
    errno = saved;
}

// Registers `fd` for `signo`, installing the handler for its first user.
bool listen_for_dump_signal(int signo, int fd) {
    std::lock_guard<std::mutex> lock(dump_signal_mutex);
    installed_signal* sig = nullptr;
    for (auto& s : dump_signals) {
        if (s.users != 0 && s.signo == signo) sig = &s;
    }
    if (!sig) {
        for (auto& s : dump_signals) {
            if (s.users == 0) {
                sig = &s;
                break;
            }
        }
        if (!sig) return false;
        struct sigaction sa{};
        sa.sa_handler = on_dump_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        if (sigaction(signo, &sa, &sig->previous) != 0) return false;
        sig->signo = signo;
    }
    for (auto& slot : dump_listeners) {
        if (slot.load(std::memory_order_relaxed) == 0) {
            // release: the eventfd exists before the handler can see it
            slot.store((std::uint64_t(static_cast<unsigned>(signo)) << 32) |
                           static_cast<std::uint64_t>(fd + 1),
                       std::memory_order_release);
            ++sig->users;
            return true;
        }
    }
    if (sig->users == 0) sigaction(signo, &sig->previous, nullptr);
    return false;
}

// Unregisters `fd`; the last user of `signo` restores the disposition found before.
void stop_listening_for_dump_signal(int signo, int fd) {
    std::lock_guard<std::mutex> lock(dump_signal_mutex);
    const std::uint64_t mine =
        (std::uint64_t(static_cast<unsigned>(signo)) << 32) | static_cast<std::uint64_t>(fd + 1);
    for (auto& slot : dump_listeners) {
        if (slot.load(std::memory_order_relaxed) == mine) slot.store(0, std::memory_order_release);
    }
    for (auto& s : dump_signals) {
        if (s.users != 0 && s.signo == signo && --s.users == 0) {
            sigaction(signo, &s.previous, nullptr);
        }
    }
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
    throw config_error("blitz::config: inspect_socket '" + path + "': " + what + ": " +
                       std::strerror(err));
}

bool write_all(int fd, const char* p, std::size_t n) noexcept {
    while (n > 0) {
        const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;  // the peer went, or it did not read for a second
        p += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
}

sockaddr_un address_of(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    return a;
}

}  // namespace

std::string inspect_server::default_socket_path(long pid, bool make_dir) {
    const std::string name = "blitz-" + std::to_string(pid) + ".sock";
    if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) {
        return std::string(xdg) + "/" + name;
    }
    const std::string dir = "/tmp/blitz-" + std::to_string(::geteuid());
    if (make_dir) {
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) fail(dir, "mkdir", errno);
        struct stat st{};
        if (::lstat(dir.c_str(), &st) != 0) fail(dir, "stat", errno);
        if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
            throw config_error("blitz::config: inspect_socket: " + dir +
                               " is not a directory of this user closed to others; remove it "
                               "or set XDG_RUNTIME_DIR");
        }
    }
    return dir + "/" + name;
}

inspect_server::inspect_server(std::string path, int dump_signal, handler answer,
                               std::function<std::string()> dump_text)
    : dump_signal_(dump_signal), answer_(std::move(answer)), dump_text_(std::move(dump_text)) {
    path_ = path == "auto" ? default_socket_path(::getpid(), /*make_dir=*/true) : std::move(path);
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) throw std::system_error(errno, std::generic_category(), "blitz: eventfd");
    try {
        if (!path_.empty()) {
            if (path_.size() > 107) fail(path_, "longer than 107 bytes", ENAMETOOLONG);
            // A socket file already there: in use (it answers) or stale (left by a process
            // that ended without unlinking it), which is replaced.
            struct stat st{};
            if (::lstat(path_.c_str(), &st) == 0) {
                if (!S_ISSOCK(st.st_mode)) fail(path_, "exists and is not a socket", EEXIST);
                const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                const sockaddr_un a = address_of(path_);
                const bool live =
                    probe >= 0 &&
                    ::connect(probe, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
                if (probe >= 0) ::close(probe);
                if (live) fail(path_, "another process serves it", EADDRINUSE);
                ::unlink(path_.c_str());
            }
            listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (listen_fd_ < 0) fail(path_, "socket", errno);
            // Bound under a temporary name, closed to others, then renamed into place: the
            // path never names a socket with the umask's permissions.
            const std::string tmp = path_ + ".tmp" + std::to_string(::getpid());
            if (tmp.size() > 107)
                fail(path_, "longer than 107 bytes with its temporary suffix", ENAMETOOLONG);
            ::unlink(tmp.c_str());
            const sockaddr_un a = address_of(tmp);
            if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
                fail(path_, "bind", errno);
            if (::chmod(tmp.c_str(), 0600) != 0) {
                const int e = errno;
                ::unlink(tmp.c_str());
                fail(path_, "chmod", e);
            }
            if (::listen(listen_fd_, 8) != 0 || ::rename(tmp.c_str(), path_.c_str()) != 0) {
                const int e = errno;
                ::unlink(tmp.c_str());
                fail(path_, "listen", e);
            }
        }
        if (dump_signal_ != 0) {
            dump_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
            if (dump_fd_ < 0 || !listen_for_dump_signal(dump_signal_, dump_fd_)) {
                throw config_error("blitz::config: dump_signal " + std::to_string(dump_signal_) +
                                   ": its handler could not be installed (too many runtimes "
                                   "listening, or sigaction failed)");
            }
        }
        thread_ = std::thread([this] { run(); });
    } catch (...) {
        if (dump_fd_ >= 0) {
            stop_listening_for_dump_signal(dump_signal_, dump_fd_);
            ::close(dump_fd_);
        }
        if (listen_fd_ >= 0) {
            ::close(listen_fd_);
            ::unlink(path_.c_str());
        }
        ::close(stop_fd_);
        throw;
    }
}

void inspect_server::stop() noexcept {
    if (!thread_.joinable()) return;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
    if (dump_fd_ >= 0) {
        stop_listening_for_dump_signal(dump_signal_, dump_fd_);
        ::close(dump_fd_);
        dump_fd_ = -1;
    }
    if (listen_fd_ >= 0) {
        ::close(listen_fd_);
        ::unlink(path_.c_str());
        listen_fd_ = -1;
    }
    ::close(stop_fd_);
}

void inspect_server::run() noexcept {
    pthread_setname_np(pthread_self(), "blitz-inspect");
    for (;;) {
        pollfd fds[3];
        nfds_t n = 0;
        fds[n++] = {stop_fd_, POLLIN, 0};
        if (dump_fd_ >= 0) fds[n++] = {dump_fd_, POLLIN, 0};
        if (listen_fd_ >= 0) fds[n++] = {listen_fd_, POLLIN, 0};
        if (::poll(fds, n, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (fds[0].revents != 0) return;
        for (nfds_t i = 1; i < n; ++i) {
            if (fds[i].revents == 0) continue;
            if (fds[i].fd == dump_fd_) {
                std::uint64_t v = 0;
                [[maybe_unused]] const auto r = ::read(dump_fd_, &v, sizeof v);
                try {
                    const std::string text = dump_text_();
                    std::fwrite(text.data(), 1, text.size(), stderr);
                    std::fflush(stderr);
                } catch (...) {
                    std::fputs("blitz: the task dump failed (out of memory?)\n", stderr);
                }
            } else {
                const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
                if (conn >= 0) {
                    serve_one(conn);
                    ::close(conn);
                } else if (errno == EMFILE || errno == ENFILE) {
                    // Out of descriptors: the pending connection stays queued; look again on
                    // the next wake instead of spinning on it.
                    pollfd wait{stop_fd_, POLLIN, 0};
                    if (::poll(&wait, 1, 100) > 0) return;
                }
            }
        }
    }
}

void inspect_server::serve_one(int conn) noexcept {
    ucred cred{};
    socklen_t len = sizeof cred;
    const timeval second{1, 0};
    ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
    ::setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &second, sizeof second);
    if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
        static const char refused[] = "refused: the inspect socket serves only its own user\n";
        write_all(conn, refused, sizeof refused - 1);
        return;
    }
    std::string request;
    char buf[256];
    for (;;) {
        const ssize_t k = ::recv(conn, buf, sizeof buf, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;  // end of the request, the peer's timeout, or an error
        request.append(buf, static_cast<std::size_t>(k));
        if (request.find('\n') != std::string::npos || request.size() > 255) break;
    }
    if (const auto nl = request.find('\n'); nl != std::string::npos) request.resize(nl);
    while (!request.empty() && (request.back() == '\r' || request.back() == ' '))
        request.pop_back();
    if (request.empty()) return;  // nothing asked (or a client that stalled)
    // An HTTP GET (a scraper through `curl --unix-socket`, or a proxy): the request line names
    // the answer ("GET /metrics" is the OpenMetrics text); the headers that follow are not read.
    const bool http = request.rfind("GET /", 0) == 0;
    if (http) {
        const std::string target = request.substr(5, request.find(' ', 5) - 5);
        request = target == "metrics" || target.empty() ? "openmetrics"
                  : target == "dump/text"               ? "dump text"
                                                        : target;
    }
    std::string reply;
    try {
        reply = answer_(request);
    } catch (const std::exception& e) {
        reply = std::string("error: ") + e.what() + "\n";
    } catch (...) {
        reply = "error: the request failed\n";
    }
    if (http) {
        const bool known = reply.rfind("error:", 0) != 0;
        const char* type =
            request == "openmetrics" ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
            : request == "metrics" || request == "dump" ? "application/json"
                                                        : "text/plain; charset=utf-8";
        const std::string head = std::string("HTTP/1.0 ") + (known ? "200 OK" : "404 Not Found") +
                                 "\r\nContent-Type: " + type +
                                 "\r\nContent-Length: " + std::to_string(reply.size()) +
                                 "\r\nConnection: close\r\n\r\n";
        if (!write_all(conn, head.data(), head.size())) return;
    }
    write_all(conn, reply.data(), reply.size());
}

}  // namespace blitz::detail
