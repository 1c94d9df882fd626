// A small pipeline: a producer feeds a bounded channel, four workers square the numbers (the
// heavy ones on the blocking pool), a mutex guards the running total, and select races the
// whole job against a deadline. Exit status 0 when the total is right.

#include <blitz/blitz.hpp>

#include <chrono>
#include <cstdio>

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
    auto p = blitz::spawn(produce(std::move(tx), n));
    std::vector<blitz::join_handle<void>> ws;
    for (int i = 0; i < 4; ++i) ws.push_back(blitz::spawn(work(rx, m, total)));
    co_await p;
    for (auto& w : ws) co_await w;
    co_return total;
}

blitz::task<int> deadline() {
    co_await blitz::sleep(10s);
    co_return -1;
}

int main() {
    blitz::runtime rt;
    const long n = 10'000;
    auto r = rt.block_on(blitz::select(pipeline(n), deadline()));
    if (r.index() != 0) {
        std::puts("pipeline: timed out");
        return 1;
    }
    const long total = std::get<0>(r), expect = n * (n + 1) * (2 * n + 1) / 6;
    std::printf("pipeline: sum of squares 1..%ld = %ld (%s)\n", n, total,
                total == expect ? "ok" : "WRONG");
    return total == expect ? 0 : 1;
}
