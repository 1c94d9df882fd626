// SPDX-License-Identifier: MIT
// A small pipeline: a producer feeds a bounded channel, four workers square the numbers (the
// heavy ones on the blocking pool), a mutex guards the running total, and a timeout races the
// whole job against a deadline. Exit status 0 when the total is right.
//
// The workers borrow the mutex and the total from pipeline()'s frame. blitz::scoped makes that
// safe: it returns only once every task spawned through its scope has finished, also when the
// deadline wins and pipeline() is dropped (the scope's tasks are aborted and waited for first).

#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace std::chrono_literals;

blitz::task<void> produce(blitz::sender<long> tx, long n) {
    for (long i = 1; i <= n; ++i) (void)co_await tx.send(i);
}  // the last sender goes here: the workers drain the channel and stop

blitz::task<void> work(blitz::receiver<long> rx, blitz::mutex& m, long& total) {
    while (auto v = co_await rx.recv()) {
        long sq = *v * *v;
        if (*v % 100 == 0) sq = co_await blitz::spawn_blocking([x = *v] { return x * x; });
        auto guard = co_await m.lock();
        total += sq;
    }
}

blitz::task<long> pipeline(long n) {
    auto [tx, rx] = blitz::channel<long>(64);
    blitz::mutex m;
    long total = 0;
    co_await blitz::scoped([&](blitz::task_scope& s) -> blitz::task<void> {
        s.spawn(produce(std::move(tx), n));
        for (int i = 0; i < 4; ++i) s.spawn(work(rx, m, total));
        co_return;
    });  // every worker is done here: nothing outlives m and total
    co_return total;
}

int main(int argc, char** argv) {
    blitz::runtime rt;
    const long n = 10'000;
    // `pipeline 5` gives the job a 5 ms deadline (it may lose: that exercises the drop path).
    const auto limit = argc > 1 ? std::chrono::milliseconds(std::atol(argv[1])) : 10s;
    auto r = rt.block_on(blitz::timeout(limit, pipeline(n)));
    if (r.timed_out()) {
        std::puts("pipeline: timed out (every worker was stopped first)");
        return argc > 1 ? 0 : 1;
    }
    const long total = r.value(), expect = n * (n + 1) * (2 * n + 1) / 6;
    std::printf("pipeline: sum of squares 1..%ld = %ld (%s)\n", n, total,
                total == expect ? "ok" : "WRONG");
    return total == expect ? 0 : 1;
}
