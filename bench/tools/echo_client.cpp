// SPDX-License-Identifier: MIT
// echo_client: the one load generator of the I/O benchmark rows (IO.md 4.3), for blitz and
// every peer alike. No runtime: one thread, epoll (level-triggered is enough for a client),
// non-blocking sockets with TCP_NODELAY. Closed loop: each connection sends a message, waits
// for the whole echo (every byte is checked: a wrong server cannot win), and sends the next.
//
//   echo_client --port P --conns C --size S --requests N [--warmup N] [--cpu K]
//               [--rate R | --churn] [--spin]
//
// --rate R: open loop instead. Request j (of all connections) is due at start + j / R and goes
// out on connection j mod C when due, whether or not earlier echoes came back (the echo stream
// keeps them in order); its latency runs from when it was due, not from when it was sent, so a
// server that stalls is charged for every request it held up (no coordinated omission).
// --churn: every request on a new connection: connect, send, read the whole echo, close with
// an RST (SO_LINGER 0, so no TIME_WAIT piles up), C connections at a time; latency from the
// connect to the last byte.
//
// Prints one JSON object: requests, seconds, requests per second, latency percentiles in ns
// (p50, p99, p999, from every request's send-to-last-byte time), and the bytes checked.

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct conn {
    int fd = -1;
    std::vector<char> out, in;
    std::size_t sent = 0, got = 0;
    clock_type::time_point started;
    std::uint64_t seq = 0;
};

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "echo_client: %s: %s\n", what, std::strerror(errno));
    std::exit(2);
}

// The message of request `seq` on connection `c`: deterministic, different every time.
inline char expected_byte(std::size_t c, std::uint64_t seq, std::size_t i) {
    return static_cast<char>('a' + (c * 7 + seq * 13 + i) % 26);
}

void fill(std::vector<char>& buf, std::size_t c, std::uint64_t seq) {
    for (std::size_t i = 0; i < buf.size(); ++i) {
        buf[i] = expected_byte(c, seq, i);
    }
}

std::uint64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

void print_result(const char* mode, std::size_t conns, std::size_t size, std::uint64_t requests,
                  double secs, std::vector<std::uint64_t>& lat, std::uint64_t bad,
                  const std::string& extra) {
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) -> std::uint64_t {
        if (lat.empty()) return 0;
        return lat[std::min(lat.size() - 1, static_cast<std::size_t>(p * lat.size()))];
    };
    std::printf(
        "{\"mode\": \"%s\", \"conns\": %zu, \"size\": %zu, \"requests\": %llu, "
        "\"seconds\": %.6f, \"rps\": %.1f, \"p50_ns\": %llu, \"p99_ns\": %llu, "
        "\"p999_ns\": %llu, \"bad_echoes\": %llu%s}\n",
        mode, conns, size, static_cast<unsigned long long>(requests), secs, requests / secs,
        static_cast<unsigned long long>(pct(0.5)), static_cast<unsigned long long>(pct(0.99)),
        static_cast<unsigned long long>(pct(0.999)), static_cast<unsigned long long>(bad),
        extra.c_str());
}

sockaddr_in loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

// epoll_wait for the closed-loop and churn modes: the events (EINTR retried), or -1 after
// 10 s without any (a stalled server; said on stderr).
// With --spin the client never sleeps: it polls with a zero timeout (the "both sides
// spinning" probe of IO.md 4.4), so a busy server's gain is not hidden behind the client's
// own wake-up.
bool g_spin = false;

int wait_events(int ep, std::vector<epoll_event>& evs, std::uint64_t done, std::uint64_t total) {
    const auto spin_start = std::chrono::steady_clock::now();
    for (;;) {
        if (g_spin) {
            const int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 0);
            if (n > 0) return n;
            if (n < 0 && errno != EINTR) die("epoll_wait");
            if (std::chrono::steady_clock::now() - spin_start < std::chrono::seconds(10)) continue;
        }
        const int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 10000);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        if (n == 0) {
            std::fprintf(stderr, "echo_client: no progress for 10 s (%llu of %llu done)\n",
                         static_cast<unsigned long long>(done),
                         static_cast<unsigned long long>(total));
            return -1;
        }
        return n;
    }
}

// A connected, non-blocking TCP_NODELAY socket (blocking connect: loopback answers at once).
int connect_nodelay(const sockaddr_in& addr) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) die("connect");
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

// Open loop at `rate` requests per second over `conns` connections (see the top).
int open_loop(int port, std::size_t conns, std::size_t size, std::uint64_t requests,
              std::uint64_t warmup, double rate) {
    struct oconn {
        int fd = -1;
        std::deque<clock_type::time_point> due;  // of the requests sent, not yet echoed
        std::uint64_t sent_seq = 0;
        std::uint64_t got_bytes = 0;
        std::vector<char> out, in;
    };
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    std::vector<oconn> cs(conns);
    const sockaddr_in addr = loopback(port);
    for (std::size_t i = 0; i < conns; ++i) {
        oconn& c = cs[i];
        c.fd = connect_nodelay(addr);
        c.out.resize(size);
        c.in.resize(65536);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = i;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) die("epoll_ctl");
    }
    const std::uint64_t total = warmup + requests;
    const auto start = clock_type::now();
    auto due_of = [&](std::uint64_t j) {
        return start + std::chrono::nanoseconds(static_cast<std::int64_t>(j * 1e9 / rate));
    };
    const auto give_up = due_of(total) + std::chrono::seconds(30);
    std::uint64_t issued = 0, done = 0, bad = 0;
    std::vector<std::uint64_t> lat;
    lat.reserve(requests);
    std::vector<epoll_event> evs(std::max<std::size_t>(conns, 16));
    clock_type::time_point measured_from = warmup == 0 ? start : clock_type::time_point{};
    while (done < total) {
        auto now = clock_type::now();
        if (now > give_up) {
            std::fprintf(stderr,
                         "echo_client: open loop: %llu of %llu echoed 30 s after the last "
                         "was due\n",
                         static_cast<unsigned long long>(done),
                         static_cast<unsigned long long>(total));
            return 1;
        }
        while (issued < total && due_of(issued) <= now) {
            oconn& c = cs[issued % conns];
            for (std::size_t i = 0; i < size; ++i) {
                c.out[i] = expected_byte(issued % conns, c.sent_seq, i);
            }
            std::size_t sent = 0;
            while (sent < size) {
                const ssize_t n = send(c.fd, c.out.data() + sent, size - sent, MSG_NOSIGNAL);
                if (n < 0) {
                    if (errno == EAGAIN) continue;  // a backlogged server: wait for room
                    die("send");
                }
                sent += static_cast<std::size_t>(n);
            }
            c.due.push_back(due_of(issued));
            ++c.sent_seq;
            ++issued;
        }
        // Sleep until the next request is due (or an echo arrives); spin the last 50 us.
        timespec ts{0, 0};
        if (issued < total) {
            const auto left = due_of(issued) - clock_type::now();
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
            if (ns > 50'000) ts.tv_nsec = std::min<long>(ns - 50'000, 999'999'999);
        } else {
            ts.tv_sec = 1;
        }
        const int n = epoll_pwait2(ep, evs.data(), static_cast<int>(evs.size()), &ts, nullptr);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_pwait2");
        }
        for (int k = 0; k < n; ++k) {
            const std::size_t i = evs[k].data.u64;
            oconn& c = cs[i];
            for (;;) {
                const ssize_t r = recv(c.fd, c.in.data(), c.in.size(), 0);
                if (r < 0 && errno == EAGAIN) break;
                if (r <= 0) {
                    std::fprintf(stderr, "echo_client: the server closed connection %zu\n", i);
                    return 1;
                }
                const auto at = clock_type::now();
                for (ssize_t b = 0; b < r; ++b) {
                    const std::uint64_t off = c.got_bytes++;
                    if (c.in[b] != expected_byte(i, off / size, off % size)) ++bad;
                    if (c.got_bytes % size != 0) continue;
                    // The last byte of the oldest request still out on this connection.
                    if (c.due.empty()) {
                        ++bad;
                        continue;
                    }
                    const auto due = c.due.front();
                    c.due.pop_front();
                    ++done;
                    if (done == warmup && warmup > 0) measured_from = at;
                    if (done > warmup) lat.push_back(ns_between(due, at));
                }
            }
        }
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - measured_from).count();
    char extra[64];
    std::snprintf(extra, sizeof extra, ", \"rate\": %.1f", rate);
    print_result("open", conns, size, requests, secs, lat, bad, extra);
    for (oconn& c : cs) close(c.fd);
    return bad ? 1 : 0;
}

// Accept churn: a new connection per request, `conns` at a time (see the top).
int churn(int port, std::size_t conns, std::size_t size, std::uint64_t requests,
          std::uint64_t warmup) {
    struct cconn {
        int fd = -1;
        bool connected = false;
        std::size_t got = 0;
        std::uint64_t seq = 0;
        clock_type::time_point started;
    };
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    const sockaddr_in addr = loopback(port);
    std::vector<cconn> cs(conns);
    std::vector<char> out(size), in(size);
    const std::uint64_t total = warmup + requests;
    std::uint64_t issued = 0, done = 0, bad = 0;
    std::vector<std::uint64_t> lat;
    lat.reserve(requests);
    auto open_one = [&](std::size_t i) {
        cconn& c = cs[i];
        c.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (c.fd < 0) die("socket");
        const int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        const linger rst{1, 0};
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
        c.started = clock_type::now();
        c.connected = false;
        c.got = 0;
        c.seq = issued++;
        if (connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
            errno != EINPROGRESS) {
            die("connect");
        }
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.u64 = i;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) die("epoll_ctl");
    };
    clock_type::time_point measured_from =
        warmup == 0 ? clock_type::now() : clock_type::time_point{};
    for (std::size_t i = 0; i < conns && issued < total; ++i) open_one(i);
    std::vector<epoll_event> evs(std::max<std::size_t>(conns, 16));
    while (done < total) {
        const int n = wait_events(ep, evs, done, total);
        if (n < 0) return 1;
        for (int k = 0; k < n; ++k) {
            const std::size_t i = evs[k].data.u64;
            cconn& c = cs[i];
            if (!c.connected) {
                if (!(evs[k].events & EPOLLOUT)) continue;
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err != 0) {
                    errno = err;
                    die("connect (churn)");
                }
                c.connected = true;
                for (std::size_t b = 0; b < size; ++b) out[b] = expected_byte(i, c.seq, b);
                if (send(c.fd, out.data(), size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) {
                    die("send (churn)");
                }
                epoll_event ev{};
                ev.events = EPOLLIN;
                ev.data.u64 = i;
                epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
                continue;
            }
            const ssize_t r = recv(c.fd, in.data() + c.got, size - c.got, 0);
            if (r < 0 && errno == EAGAIN) continue;
            if (r <= 0) {
                std::fprintf(stderr, "echo_client: churn: the server closed connection early\n");
                return 1;
            }
            for (ssize_t b = 0; b < r; ++b) {
                if (in[c.got + b] != expected_byte(i, c.seq, c.got + b)) ++bad;
            }
            c.got += static_cast<std::size_t>(r);
            if (c.got < size) continue;
            const auto now = clock_type::now();
            ++done;
            if (done == warmup && warmup > 0) measured_from = now;
            if (done > warmup) lat.push_back(ns_between(c.started, now));
            close(c.fd);  // an RST: SO_LINGER 0
            if (issued < total) open_one(i);
        }
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - measured_from).count();
    print_result("churn", conns, size, requests, secs, lat, bad, "");
    return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    int port = 0, cpu = -1;
    std::size_t conns = 1, size = 64;
    std::uint64_t requests = 100000, warmup = 0;
    double rate = 0;
    bool churning = false;
    for (int i = 1; i < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--churn" || a == "--spin") {
            (a == "--churn" ? churning : g_spin) = true;
            --i;  // a flag without a value
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "echo_client: %s needs a value\n", a.c_str());
            return 2;
        }
        const char* v = argv[i + 1];
        if (a == "--rate")
            rate = std::strtod(v, nullptr);
        else if (a == "--port")
            port = std::atoi(v);
        else if (a == "--conns")
            conns = std::strtoul(v, nullptr, 10);
        else if (a == "--size")
            size = std::strtoul(v, nullptr, 10);
        else if (a == "--requests")
            requests = std::strtoull(v, nullptr, 10);
        else if (a == "--warmup")
            warmup = std::strtoull(v, nullptr, 10);
        else if (a == "--cpu")
            cpu = std::atoi(v);
        else {
            std::fprintf(stderr, "echo_client: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (port <= 0 || conns == 0 || size == 0) {
        std::fprintf(stderr,
                     "usage: echo_client --port P [--conns C] [--size S] [--requests N]"
                     " [--warmup N] [--cpu K] [--rate R | --churn] [--spin]\n");
        return 2;
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity");
    }
    if (rate > 0) return open_loop(port, conns, size, requests, warmup, rate);
    if (churning) return churn(port, conns, size, requests, warmup);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    std::vector<conn> cs(conns);
    const sockaddr_in addr = loopback(port);
    for (std::size_t i = 0; i < conns; ++i) {
        conn& c = cs[i];
        c.fd = connect_nodelay(addr);
        c.out.resize(size);
        c.in.resize(size);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = i;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) die("epoll_ctl");
    }
    const std::uint64_t total = warmup + requests;
    std::uint64_t issued = 0, done = 0, bad = 0;
    std::vector<std::uint64_t> lat;
    lat.reserve(requests);
    auto start_one = [&](std::size_t i) {
        conn& c = cs[i];
        fill(c.out, i, c.seq);
        c.sent = c.got = 0;
        c.started = clock_type::now();
        while (c.sent < size) {
            const ssize_t n = send(c.fd, c.out.data() + c.sent, size - c.sent, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN) continue;  // tiny messages: the buffer frees at once
                die("send");
            }
            c.sent += static_cast<std::size_t>(n);
        }
        ++issued;
    };
    clock_type::time_point measured_from{};
    if (warmup == 0) measured_from = clock_type::now();
    for (std::size_t i = 0; i < conns && issued < total; ++i) start_one(i);
    std::vector<epoll_event> evs(std::max<std::size_t>(conns, 16));
    while (done < total) {
        const int n = wait_events(ep, evs, done, total);
        if (n < 0) return 1;
        for (int k = 0; k < n; ++k) {
            const std::size_t i = evs[k].data.u64;
            conn& c = cs[i];
            for (;;) {
                const ssize_t r = recv(c.fd, c.in.data() + c.got, size - c.got, 0);
                if (r < 0 && errno == EAGAIN) break;
                if (r <= 0) {
                    std::fprintf(stderr, "echo_client: the server closed connection %zu\n", i);
                    return 1;
                }
                c.got += static_cast<std::size_t>(r);
                if (c.got < size) continue;
                const auto now = clock_type::now();
                if (std::memcmp(c.in.data(), c.out.data(), size) != 0) ++bad;
                ++done;
                ++c.seq;
                if (done == warmup && warmup > 0) measured_from = now;
                if (done > warmup) {
                    lat.push_back(static_cast<std::uint64_t>(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.started)
                            .count()));
                }
                if (issued < total) start_one(i);
                break;
            }
        }
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - measured_from).count();
    print_result("closed", conns, size, requests, secs, lat, bad, "");
    for (conn& c : cs) close(c.fd);
    return bad ? 1 : 0;
}
