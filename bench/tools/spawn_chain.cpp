// SPDX-License-Identifier: MIT
// spawn_chain: what one link of a chained spawn costs (issue 21). A task spawns the next and
// ends, `links` times; the last signals the plain thread. With a long chain the two wakes
// around it (the first worker's, the plain thread's) vanish in the per-link figure, which is
// then the CPU cost of a spawn, a LIFO hand-off, a poll and a completion.
//   spawn_chain [--workers N] [--links N] [--reps N]     (defaults 1, 1,000,000, 7)
// Prints each repetition's ns per link, then the minimum and the median.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <semaphore>
#include <vector>

#include "blitz/blitz.hpp"

namespace {

std::binary_semaphore done(0);

blitz::task<void> link(long n) {
    if (n == 0) {
        done.release();
    } else {
        blitz::spawn(link(n - 1)).detach();
    }
    co_return;
}

long arg_or(int argc, char** argv, const char* name, long fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], name) == 0) return std::strtol(argv[i + 1], nullptr, 10);
    }
    return fallback;
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
    std::vector<double> per_link;
    for (long r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        rt.spawn(link(links)).detach();
        done.acquire();
        const double ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        per_link.push_back(ns / double(links));
        std::printf("rep %ld: %.1f ns a link\n", r, per_link.back());
    }
    std::sort(per_link.begin(), per_link.end());
    std::printf("%ld workers, %ld links: min %.1f ns, median %.1f ns a link\n", workers, links,
                per_link.front(), per_link[per_link.size() / 2]);
    return 0;
}
