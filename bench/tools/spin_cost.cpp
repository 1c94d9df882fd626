// SPDX-License-Identifier: MIT
// spin_cost: what the park spin (config::park_spin) buys in wake latency and what it costs in
// CPU (issue 45, item 6). For each setting, in rotation within one process so that the load on
// the machine falls on all alike, a fresh runtime of N workers:
//   wakes   a plain thread sends on a oneshot that a task on the idle runtime awaits, after
//           1 ms of idleness (the wake_latency row of `blitz bench`); reports the p50 and p90
//           of send-to-running, and the process's CPU time (user + system, every thread) per
//           wake (the sender's 1 ms sleeps burn none of it)
//   idle    the runtime with no work at all for 200 ms: the CPU it burns (parked workers
//           should burn none; a spin that never gives up would burn N x 200 ms)
// Settings: off (park_spin 0, the default), spin10 (a fixed 10 us spin), aspin20 and aspin50
// (the adaptive spin capped at 20 and 50 us).
//   spin_cost [--workers N] [--rounds N] [--wakes N]      (defaults 2, 5, 100)

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "tool_args.hpp"

namespace {

using bench_tools::arg_or;

using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct setting {
    const char* name;
    std::chrono::microseconds spin;
    bool adaptive;
};

const setting settings[] = {
    {"off", 0us, true},
    {"spin10", 10us, false},
    {"aspin20", 20us, true},
    {"aspin50", 50us, true},
};

double cpu_us() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct tally {
    std::vector<double> wake_ns;
    double wake_cpu_us = 0, idle_cpu_us = 0;
    int wakes = 0, idles = 0;
};

double pct(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(static_cast<double>(v.size()) * q))];
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc ||
            (std::strcmp(argv[i], "--workers") != 0 && std::strcmp(argv[i], "--rounds") != 0 &&
             std::strcmp(argv[i], "--wakes") != 0)) {
            std::fprintf(stderr, "usage: spin_cost [--workers N] [--rounds N] [--wakes N]\n");
            return 2;
        }
    }
    const long workers = arg_or(argc, argv, "--workers", 2);
    const long rounds = arg_or(argc, argv, "--rounds", 5);
    const long wakes = arg_or(argc, argv, "--wakes", 100);
    if (workers < 1 || rounds < 1 || wakes < 1) {
        std::fprintf(stderr, "spin_cost: --workers, --rounds and --wakes must be >= 1\n");
        return 2;
    }
    constexpr std::size_t n = sizeof(settings) / sizeof(settings[0]);
    std::vector<tally> t(n);
    for (long r = 0; r < rounds; ++r) {
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = (k + static_cast<std::size_t>(r)) % n;  // rotate the order
            blitz::config c;
            c.workers = static_cast<unsigned>(workers);
            c.park_spin = settings[i].spin;
            c.park_spin_adaptive = settings[i].adaptive;
            blitz::runtime rt(c);
            rt.spawn([]() -> blitz::task<void> { co_return; }()).join();  // started
            const double w0 = cpu_us();
            for (long s = 0; s < wakes; ++s) {
                auto [tx, rx] = blitz::oneshot<steady::time_point>();
                auto h = rt.spawn(
                    [](blitz::oneshot_receiver<steady::time_point> rx) -> blitz::task<double> {
                        auto sent = co_await rx;
                        co_return std::chrono::duration<double, std::nano>(steady::now() - *sent)
                            .count();
                    }(std::move(rx)));
                std::this_thread::sleep_for(1ms);
                (void)std::move(tx).send(steady::now());
                t[i].wake_ns.push_back(h.join());
            }
            t[i].wake_cpu_us += cpu_us() - w0;
            t[i].wakes += static_cast<int>(wakes);
            std::this_thread::sleep_for(20ms);  // let the spins end and the workers park
            const double i0 = cpu_us();
            std::this_thread::sleep_for(200ms);
            t[i].idle_cpu_us += cpu_us() - i0;
            ++t[i].idles;
        }
    }
    std::printf(
        "| setting | wake p50 us | wake p90 us | CPU us a wake | idle CPU ms in 200 ms |\n");
    std::printf("|---|---:|---:|---:|---:|\n");
    for (std::size_t i = 0; i < n; ++i) {
        std::printf("| %s | %.1f | %.1f | %.1f | %.2f |\n", settings[i].name,
                    pct(t[i].wake_ns, 0.5) / 1e3, pct(t[i].wake_ns, 0.9) / 1e3,
                    t[i].wake_cpu_us / t[i].wakes, t[i].idle_cpu_us / t[i].idles / 1e3);
    }
    return 0;
}
