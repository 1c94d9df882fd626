// SPDX-License-Identifier: MIT
// The consumer project's program: a few tasks, a channel and a timer; prints "consumer ok".
#include <blitz/blitz.hpp>

#include <chrono>
#include <cstdio>

blitz::task<int> produce(blitz::sender<int> tx) {
    for (int i = 1; i <= 100; ++i) {
        auto sent = co_await tx.send(i);
        if (!sent) co_return -1;
    }
    co_return 0;
}

blitz::task<long> consume() {
    auto [tx, rx] = blitz::channel<int>(8);
    auto producer = blitz::spawn(produce(std::move(tx)));
    long sum = 0;
    while (auto v = co_await rx.recv()) sum += *v;
    co_await blitz::sleep(std::chrono::milliseconds(1));
    co_return (co_await producer) == 0 ? sum : -1;
}

int main() {
    blitz::runtime rt(blitz::config{});
    const long sum = rt.block_on(consume());
    std::printf("consumer %s (sum %ld)\n", sum == 5050 ? "ok" : "FAILED", sum);
    return sum == 5050 ? 0 : 1;
}
