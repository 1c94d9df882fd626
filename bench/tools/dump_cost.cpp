// SPDX-License-Identifier: MIT
// dump_cost: what a task dump and a lost-task question cost with N live tasks (issue 46's
// target: a dump of 10^5 live tasks in under 1 s). The tasks wait in nested coroutines on a
// mix of channels, sleeps and joins (so each chain has 2 frames and a described leaf); each
// round times runtime::dump() and runtime::find_lost() (two dumps and the analysis).
//   dump_cost [--workers N] [--tasks N] [--rounds N]   (defaults 2, 100000, 5)
// Prints each round's times, then the medians and the time per listed task.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "blitz/blitz.hpp"
#include "tool_args.hpp"

namespace {

blitz::task<int> wait_inner(blitz::receiver<int>& rx) {
    auto v = co_await rx.recv();
    co_return v.value_or(0);
}

blitz::task<void> waiter(blitz::receiver<int> rx) { (void)co_await wait_inner(rx); }

blitz::task<void> sleeper() { co_await blitz::sleep(std::chrono::hours(1)); }

blitz::task<void> joiner(blitz::join_handle<void> h) { co_await h; }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    using bench_tools::arg_or;
    using clock = std::chrono::steady_clock;
    const long workers = arg_or(argc, argv, "--workers", 2);
    const long tasks = arg_or(argc, argv, "--tasks", 100000);
    const long rounds = arg_or(argc, argv, "--rounds", 5);
    if (workers < 1 || tasks < 3 || rounds < 1) {
        std::fprintf(stderr, "usage: dump_cost [--workers N] [--tasks N >= 3] [--rounds N]\n");
        return 2;
    }
    blitz::config c;
    c.workers = static_cast<unsigned>(workers);
    blitz::runtime rt(c);
    std::vector<blitz::sender<int>> senders;
    std::vector<blitz::join_handle<void>> handles;
    senders.reserve(static_cast<std::size_t>(tasks));
    handles.reserve(static_cast<std::size_t>(tasks));
    for (long i = 0; i < tasks; ++i) {
        switch (i % 3) {
            case 0: {
                auto [tx, rx] = blitz::channel<int>(1);
                senders.push_back(std::move(tx));
                handles.push_back(rt.spawn(waiter(std::move(rx))));
                break;
            }
            case 1:
                handles.push_back(rt.spawn(sleeper()));
                break;
            default:
                handles.push_back(rt.spawn(joiner(rt.spawn(sleeper()))));
                break;
        }
    }
    // Every task waiting (the joiners' targets too) before the first round.
    std::size_t listed = 0;
    for (int i = 0; i < 10000; ++i) {
        listed = rt.dump().tasks.size();
        if (listed >= static_cast<std::size_t>(tasks + tasks / 3)) break;
    }
    std::vector<double> dump_ms, lost_ms;
    for (long r = 0; r < rounds; ++r) {
        const auto t0 = clock::now();
        const blitz::runtime_dump d = rt.dump();
        const auto t1 = clock::now();
        const blitz::lost_report l = rt.find_lost();
        const auto t2 = clock::now();
        dump_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        lost_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
        listed = d.tasks.size();
        std::printf("round %ld: dump of %zu tasks %.1f ms; find_lost %.1f ms (%zu lost)\n", r,
                    listed, dump_ms.back(), lost_ms.back(), l.lost.size());
    }
    const double dm = median(dump_ms);
    std::printf("median: dump %.1f ms (%.2f us a task), find_lost %.1f ms, %ld workers\n", dm,
                dm * 1000.0 / static_cast<double>(listed), median(lost_ms), workers);
    for (auto& h : handles) h.abort();
    return 0;
}
