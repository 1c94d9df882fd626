#include "bench.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "blitz/blitz.hpp"
#include "table.hpp"
#include "time/timer_driver.hpp"
#include "time/timer_wheel.hpp"

namespace blitz::cli {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Sleeps `n` times for `d` and returns each lateness (actual - requested) in microseconds.
task<std::vector<double>> measure_sleeps(std::chrono::microseconds d, unsigned n) {
    std::vector<double> late;
    late.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
        const auto t0 = steady::now();
        co_await sleep(d);
        late.push_back(std::chrono::duration<double, std::micro>(steady::now() - t0 - d).count());
    }
    co_return late;
}

task<void> busy_loop(std::atomic<bool>& stop) {
    // Self-waking CPU work: ~20 us of arithmetic per poll, then a yield.
    volatile std::uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 20'000; ++i) x = x + i;
        co_await yield_now();
    }
}

std::string us(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return b;
}

double pct(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5));
    return v[i];
}

template <class F>
double ns_per_op(F&& f, int ops) {
    const auto t0 = steady::now();
    f(ops);
    return std::chrono::duration<double, std::nano>(steady::now() - t0).count() / ops;
}

}  // namespace

int run_bench(const bench_options& o) {
    config cfg;
    cfg.workers = o.workers;
    cfg.topology = o.topology;
    table t({"scenario", "sleep", "samples", "p50 late (us)", "p99 late (us)", "max late (us)",
             "early"});
    unsigned workers = 0;
    std::string placement;
    for (bool busy : {false, true}) {
        runtime rt(cfg);
        workers = rt.num_workers();
        placement = rt.placement().summary();
        std::atomic<bool> stop{false};
        std::vector<join_handle<void>> hogs;
        if (busy) {
            for (unsigned i = 0; i < rt.num_workers(); ++i) hogs.push_back(rt.spawn(busy_loop(stop)));
        }
        for (auto d : {1000us, 10'000us}) {
            const unsigned n = d == 1000us ? o.samples : std::max(20u, o.samples / 4);
            auto late = rt.block_on(measure_sleeps(d, n));
            const auto early = std::count_if(late.begin(), late.end(), [](double v) { return v < 0; });
            t.add({busy ? "all workers busy" : "runtime idle", us(d.count() / 1000.0) + " ms",
                   std::to_string(n), us(pct(late, 0.5)), us(pct(late, 0.99)),
                   us(*std::max_element(late.begin(), late.end())), std::to_string(early)});
        }
        stop = true;
        for (auto& h : hogs) h.join();
    }
    std::cout << "Timer accuracy: sleep(d) lateness on the real clock, " << workers
              << " workers (busy: one self-waking ~20 us task per worker)\nplacement: "
              << placement << "\n\n";
    t.print(std::cout);

    // Timer cost: insert + cancel, alone and through the runtime's driver (lock included).
    detail::timer_wheel w;
    detail::timer_entry e;
    const double wheel_ns = ns_per_op([&](int n) {
        for (int i = 0; i < n; ++i) {
            e.deadline = 1 + (std::uint64_t(i) * 7919) % (64ull * 64 * 64 * 64);
            w.insert(&e);
            w.remove(&e);
        }
    }, 2'000'000);
    detail::timer_driver drv(/*paused=*/true);
    detail::timer_slot s;
    const auto t0 = drv.now();
    const double driver_ns = ns_per_op([&](int n) {
        for (int i = 0; i < n; ++i) {
            const auto ms = 1 + (static_cast<std::uint64_t>(i) * 7919) % 100'000;
            drv.arm(s, t0 + std::chrono::milliseconds(ms), waker());
            drv.disarm(s);
        }
    }, 2'000'000);
    std::cout << "\nTimer cost (insert + cancel, one thread, 2,000,000 pairs):\n\n";
    table c({"path", "ns per insert+cancel"});
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", wheel_ns);
    c.add({"wheel alone", b});
    std::snprintf(b, sizeof b, "%.1f", driver_ns);
    c.add({"runtime driver (lock, tick conversion)", b});
    c.print(std::cout);
    return 0;
}

}  // namespace blitz::cli
