// SPDX-License-Identifier: MIT
// Where does SEND_ZC start to pay? (issue 44: "SEND_ZC above a measured size threshold").
// One blitz worker on io_uring sends a stream of write_owned calls of one size over a loopback
// TCP connection to a plain thread that drains it; each size runs with config
// io_send_zc_threshold 0 (plain SEND) and 1 (every send by SEND_ZC), alternated, --reps times.
// Prints a markdown table: MB/s (medians) and the worker process's CPU per MB.
//
//   send_zc_bench [--reps N] [--mb M]   (M: megabytes sent per measurement, default 256)

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace blitz;
using namespace blitz::net;

double cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct sample {
    double mb_s = 0, cpu_s_per_gb = 0;
};

sample run(std::size_t size, bool zc, std::size_t total) {
    config c;
    c.workers = 1;
    c.io_backend = io_backend_kind::io_uring;
    c.io_send_zc_threshold = zc ? 1 : 0;
    runtime rt(c);
    auto l = rt.block_on([]() -> task<io_result<tcp_listener>> {
        co_return tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
    }());
    if (!l) {
        std::fprintf(stderr, "bind: %s\n", l.error().message().c_str());
        std::exit(1);
    }
    const socket_address where = *rt.block_on(
        [](tcp_listener& l) -> task<io_result<socket_address>> { co_return l.local_addr(); }(*l));
    // The drain: a plain thread reading as fast as the kernel delivers.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, where.data(), where.size()) != 0) {
        std::perror("connect");
        std::exit(1);
    }
    std::thread drain([fd, total] {
        std::vector<char> buf(1 << 20);
        std::size_t got = 0;
        while (got < total) {
            const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
    });
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok =
        rt.block_on([](tcp_listener& l, std::size_t size, std::size_t total) -> task<bool> {
            auto s = co_await l.accept();
            if (!s) co_return false;
            // Two buffers in flight in turn would need two writers; one keeps it simple and
            // the same for both variants.
            owned_buffer b(size);
            std::memset(b.data(), 'z', size);
            b.resize(size);
            for (std::size_t sent = 0; sent < total;) {
                auto [w, back] = co_await s->write_owned(std::move(b));
                if (!w) co_return false;
                sent += *w;
                b = std::move(back);
            }
            co_return true;
        }(*l, size, total));
    drain.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    ::close(fd);
    if (!ok) {
        std::fprintf(stderr, "send failed\n");
        std::exit(1);
    }
    const double mb = static_cast<double>(total) / 1e6;
    return {mb / secs, cpu / (mb / 1000.0)};
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    std::size_t mb = 256;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--reps") reps = std::atoi(argv[i + 1]);
        if (a == "--mb") mb = static_cast<std::size_t>(std::atoll(argv[i + 1]));
    }
    const std::size_t total = mb * 1000 * 1000;
    const std::size_t sizes[] = {4096, 16384, 65536, 262144, 1048576};
    std::printf(
        "| size | SEND MB/s | SEND_ZC MB/s | ZC/SEND | SEND CPU s/GB | SEND_ZC CPU s/GB |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (const std::size_t size : sizes) {
        std::vector<double> plain, zc, plain_cpu, zc_cpu;
        for (int r = 0; r < reps; ++r) {
            // Alternated, the order flipped every repetition.
            for (int k = 0; k < 2; ++k) {
                const bool z = (k + r) % 2 == 1;
                const sample s = run(size, z, total);
                (z ? zc : plain).push_back(s.mb_s);
                (z ? zc_cpu : plain_cpu).push_back(s.cpu_s_per_gb);
            }
        }
        const double p = median(plain), z = median(zc);
        std::printf("| %zu | %.0f | %.0f | %.2f | %.2f | %.2f |\n", size, p, z, z / p,
                    median(plain_cpu), median(zc_cpu));
        std::fflush(stdout);
    }
}
