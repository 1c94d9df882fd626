// SPDX-License-Identifier: MIT
// spawn_chain: what one link of a chained spawn costs (issue 21). A task spawns the next and
// ends, `links` times; the last signals the plain thread. With a long chain the two wakes
// around it (the first worker's, the plain thread's) vanish in the per-link figure, which is
// then the CPU cost of a spawn, a LIFO hand-off, a poll and a completion. Each repetition is
// also cut in three stages: the remote spawn to the first link running (the injection and a
// parked worker's wake), the first link to the last, and the last link's signal to the plain
// thread running again (its wake).
//   spawn_chain [--workers N] [--links N] [--reps N]     (defaults 1, 1,000,000, 7)
// Prints each repetition's ns per link and stages, then the minimum and the median.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <semaphore>
#include <vector>

#include "blitz/blitz.hpp"
#include "tool_args.hpp"

namespace {

using bench_tools::arg_or;

std::binary_semaphore done(0);
long first_link = 0;  // the chain's length: the link that takes the first timestamp
std::chrono::steady_clock::time_point first_ran, last_ran;  // published by the task's spawn / done

blitz::task<void> link(long n) {
    if (n == first_link) first_ran = std::chrono::steady_clock::now();
    if (n == 0) {
        last_ran = std::chrono::steady_clock::now();
        done.release();
    } else {
        blitz::spawn(link(n - 1)).detach();
    }
    co_return;
}

}  // namespace

int main(int argc, char** argv) {
    const long workers = arg_or(argc, argv, "--workers", 1);
    const long links = arg_or(argc, argv, "--links", 1'000'000);
    const long reps = arg_or(argc, argv, "--reps", 7);
    if (workers < 1 || links < 1 || reps < 1) {
        std::fprintf(stderr, "usage: spawn_chain [--workers N] [--links N] [--reps N]\n");
        return 2;
    }
    blitz::config c;
    c.workers = static_cast<unsigned>(workers);
    blitz::runtime rt(c);
    first_link = links;
    using clock = std::chrono::steady_clock;
    const auto us = [](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double, std::micro>(b - a).count();
    };
    std::vector<double> per_link, start, chain, end;
    for (long r = 0; r < reps; ++r) {
        const auto t0 = clock::now();
        rt.spawn(link(links)).detach();
        done.acquire();
        const auto t1 = clock::now();
        per_link.push_back(us(t0, t1) * 1000.0 / double(links));
        start.push_back(us(t0, first_ran));
        chain.push_back(us(first_ran, last_ran));
        end.push_back(us(last_ran, t1));
        std::printf("rep %ld: %.1f ns a link; start %.1f us, links %.1f us, end %.1f us\n", r,
                    per_link.back(), start.back(), chain.back(), end.back());
    }
    const auto median = [](std::vector<double>& v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    const double med_start = median(start), med_chain = median(chain), med_end = median(end);
    std::sort(per_link.begin(), per_link.end());
    std::printf(
        "%ld workers, %ld links: min %.1f ns, median %.1f ns a link; medians: start %.1f us, "
        "links %.1f us, end %.1f us\n",
        workers, links, per_link.front(), per_link[per_link.size() / 2], med_start, med_chain,
        med_end);
    return 0;
}
