// SPDX-License-Identifier: MIT
// join_set_cost: what a task set adds to a spawn (issue 47, item 5). Spawns N tasks that return
// at once and gathers their values three ways, interleaved in each repetition: join handles in
// a vector awaited in spawn order (the baseline), a join_set drained with join_next, and a
// join_map keyed by index. Prints the median ns per task of each and the ratios to the
// baseline.
//   join_set_cost [--workers N] [--tasks N] [--reps N]     (defaults 2, 20,000 and 15)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "blitz/blitz.hpp"

namespace {

blitz::task<int> leaf(int i) { co_return i; }

blitz::task<long> handles(int n) {
    std::vector<blitz::join_handle<int>> hs;
    hs.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) hs.push_back(blitz::spawn(leaf(i)));
    long sum = 0;
    for (auto& h : hs) sum += co_await h;
    co_return sum;
}

blitz::task<long> set(int n) {
    blitz::join_set<int> s;
    for (int i = 0; i < n; ++i) s.spawn(leaf(i));
    long sum = 0;
    while (auto r = co_await s.join_next()) sum += std::move(*r).get();
    co_return sum;
}

blitz::task<long> map(int n) {
    blitz::join_map<int, int> m;
    for (int i = 0; i < n; ++i) m.spawn(i, leaf(i));
    long sum = 0;
    while (auto r = co_await m.join_next()) sum += std::move(r->second).get();
    co_return sum;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    unsigned workers = 2;
    int tasks = 20000, reps = 15;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--workers")) {
            workers = static_cast<unsigned>(std::atoi(argv[i + 1]));
        } else if (!std::strcmp(argv[i], "--tasks")) {
            tasks = std::atoi(argv[i + 1]);
        } else if (!std::strcmp(argv[i], "--reps")) {
            reps = std::atoi(argv[i + 1]);
        } else {
            std::fprintf(stderr, "join_set_cost: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    blitz::config c;
    c.workers = workers;
    blitz::runtime rt(c);
    const long want = static_cast<long>(tasks) * (tasks - 1) / 2;
    using fn = blitz::task<long> (*)(int);
    const fn ways[3] = {handles, set, map};
    const char* names[3] = {"join handles", "join_set", "join_map"};
    std::vector<double> ns[3];
    for (int r = 0; r < reps + 1; ++r) {
        for (int k = 0; k < 3; ++k) {
            const int w = (k + r) % 3;  // rotate the order every repetition
            const auto t0 = std::chrono::steady_clock::now();
            const long got = rt.block_on(ways[w](tasks));
            const auto t1 = std::chrono::steady_clock::now();
            if (got != want) {
                std::fprintf(stderr, "join_set_cost: %s summed %ld, not %ld\n", names[w], got,
                             want);
                return 1;
            }
            if (r > 0)  // the first repetition warms the caches and the block caches
                ns[w].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / tasks);
        }
    }
    std::printf("join_set_cost: %d tasks, %u workers, %d repetitions (median ns a task)\n", tasks,
                workers, reps);
    const double base = median(ns[0]);
    for (int w = 0; w < 3; ++w) {
        std::printf("  %-12s %8.1f ns  %.2fx\n", names[w], median(ns[w]), median(ns[w]) / base);
    }
    return 0;
}
