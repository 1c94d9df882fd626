// SPDX-License-Identifier: MIT
// stall_latency: how long after a poll starts to block does the stall detector report it
// (issue 46's target: within stall_threshold + 10 ms)? Each round blocks one worker's poll in
// a sleep of `--block-ms` and measures, on the clock, the poll's start to the report's hook.
//   stall_latency [--workers N] [--threshold-ms N] [--block-ms N] [--rounds N]
//                 (defaults 2, 50, 200, 20)
// Prints each round's delay past the threshold, then the median and the maximum.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "tool_args.hpp"

int main(int argc, char** argv) {
    using bench_tools::arg_or;
    using clock = std::chrono::steady_clock;
    const long workers = arg_or(argc, argv, "--workers", 2);
    const long threshold_ms = arg_or(argc, argv, "--threshold-ms", 50);
    const long block_ms = arg_or(argc, argv, "--block-ms", 200);
    const long rounds = arg_or(argc, argv, "--rounds", 20);
    if (workers < 1 || threshold_ms < 1 || block_ms <= threshold_ms || rounds < 1) {
        std::fprintf(stderr,
                     "usage: stall_latency [--workers N] [--threshold-ms N] "
                     "[--block-ms N > threshold] [--rounds N]\n");
        return 2;
    }
    std::atomic<std::int64_t> reported_at{0};
    blitz::config c;
    c.workers = static_cast<unsigned>(workers);
    c.stall_threshold = std::chrono::milliseconds(threshold_ms);
    c.on_stall = [&](const blitz::stall_report&) {
        reported_at = clock::now().time_since_epoch().count();
    };
    blitz::runtime rt(c);
    std::vector<double> late_ms;
    for (long r = 0; r < rounds; ++r) {
        reported_at = 0;
        std::int64_t started = 0;
        rt.block_on([](std::int64_t& s, long ms) -> blitz::task<void> {
            s = clock::now().time_since_epoch().count();
            std::this_thread::sleep_for(std::chrono::milliseconds(ms));
            co_return;
        }(started, block_ms));
        if (reported_at == 0) {
            std::printf("round %ld: not reported\n", r);
            continue;
        }
        const double ms =
            std::chrono::duration<double, std::milli>(clock::duration(reported_at.load() - started))
                .count();
        late_ms.push_back(ms - double(threshold_ms));
        std::printf("round %ld: reported %.2f ms after the poll began (%.2f past the threshold)\n",
                    r, ms, late_ms.back());
    }
    if (late_ms.empty()) return 1;
    std::sort(late_ms.begin(), late_ms.end());
    std::printf(
        "%ld workers, threshold %ld ms: past the threshold median %.2f ms, max %.2f ms "
        "(%zu of %ld rounds reported)\n",
        workers, threshold_ms, late_ms[late_ms.size() / 2], late_ms.back(), late_ms.size(), rounds);
    return 0;
}
