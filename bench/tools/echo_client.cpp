// SPDX-License-Identifier: MIT
// echo_client: the one load generator of the I/O benchmark rows (IO.md 4.3), for blitz and
// every peer alike. No runtime: one thread, epoll (level-triggered is enough for a client),
// non-blocking sockets with TCP_NODELAY. Closed loop: each connection sends a message, waits
// for the whole echo (every byte is checked: a wrong server cannot win), and sends the next.
//
//   echo_client --port P --conns C --size S --requests N [--warmup N] [--cpu K]
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
void fill(std::vector<char>& buf, std::size_t c, std::uint64_t seq) {
    for (std::size_t i = 0; i < buf.size(); ++i) {
        buf[i] = static_cast<char>('a' + (c * 7 + seq * 13 + i) % 26);
    }
}

}  // namespace

int main(int argc, char** argv) {
    int port = 0, cpu = -1;
    std::size_t conns = 1, size = 64;
    std::uint64_t requests = 100000, warmup = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const char* v = argv[i + 1];
        if (a == "--port")
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
                     " [--warmup N] [--cpu K]\n");
        return 2;
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity");
    }
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    std::vector<conn> cs(conns);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (std::size_t i = 0; i < conns; ++i) {
        conn& c = cs[i];
        c.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c.fd < 0) die("socket");
        if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("connect");
        const int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
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
        const int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 10000);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        if (n == 0) {
            std::fprintf(stderr, "echo_client: no progress for 10 s (%llu of %llu done)\n",
                         static_cast<unsigned long long>(done),
                         static_cast<unsigned long long>(total));
            return 1;
        }
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
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) -> std::uint64_t {
        if (lat.empty()) return 0;
        return lat[std::min(lat.size() - 1, static_cast<std::size_t>(p * lat.size()))];
    };
    std::printf(
        "{\"conns\": %zu, \"size\": %zu, \"requests\": %llu, \"seconds\": %.6f, "
        "\"rps\": %.1f, \"p50_ns\": %llu, \"p99_ns\": %llu, \"p999_ns\": %llu, "
        "\"bad_echoes\": %llu}\n",
        conns, size, static_cast<unsigned long long>(requests), secs, requests / secs,
        static_cast<unsigned long long>(pct(0.5)), static_cast<unsigned long long>(pct(0.99)),
        static_cast<unsigned long long>(pct(0.999)), static_cast<unsigned long long>(bad));
    for (conn& c : cs) close(c.fd);
    return bad ? 1 : 0;
}
