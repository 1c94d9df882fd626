// SPDX-License-Identifier: MIT
// Example: fan out work across the runtime's workers and gather the results.
//
//   build/release/example_fanout

#include <blitz/blitz.hpp>
#include <cstdio>
#include <vector>

blitz::task<long> square(long x) { co_return x* x; }

blitz::task<long> sum_of_squares(long n) {
    std::vector<blitz::join_handle<long>> parts;
    for (long i = 1; i <= n; ++i) parts.push_back(blitz::spawn(square(i)));
    long total = 0;
    for (auto& p : parts) total += co_await p;
    co_return total;
}

int main() {
    blitz::runtime rt;  // one worker per hardware thread
    long got = rt.block_on(sum_of_squares(1000));
    std::printf("sum of squares 1..1000 = %ld\n", got);
    return got == 333833500 ? 0 : 1;
}
