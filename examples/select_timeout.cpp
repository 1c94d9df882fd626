// SPDX-License-Identifier: MIT
// select and timeout: wait for whichever comes first of two channels and a deadline, then bound a
// slow call with a timeout. A select's losing branches give back what they took: the value a
// losing recv was granted goes back to its channel, so nothing is lost. Exit status 0 when every
// value sent arrived exactly once and the slow call timed out.
//
//   build/release/example_select_timeout

#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>

using namespace std::chrono_literals;

blitz::task<void> send_every(blitz::sender<int> tx, int first, int count,
                             std::chrono::milliseconds gap) {
    for (int i = 0; i < count; ++i) {
        co_await blitz::sleep(gap);
        (void)co_await tx.send(first + i);
    }
}

blitz::task<std::string> slow_lookup() {
    co_await blitz::sleep(200ms);
    co_return "found";
}

blitz::task<int> run() {
    auto [fast_tx, fast_rx] = blitz::channel<int>(4);
    auto [slow_tx, slow_rx] = blitz::channel<int>(4);
    auto a = blitz::spawn(send_every(std::move(fast_tx), 0, 20, 1ms));
    auto b = blitz::spawn(send_every(std::move(slow_tx), 1000, 5, 7ms));

    std::set<int> got;
    int idle_ticks = 0;
    blitz::receiver<int>* rest = nullptr;  // the channel still open after the other closed
    while (rest == nullptr) {
        // Index 0, 1 or 2 says which branch won; std::get<I> its result. When several are
        // ready the earliest argument wins, so a closed channel (its recv is always ready) must
        // leave the select, or it would starve the other one.
        auto r = co_await blitz::select(fast_rx.recv(), slow_rx.recv(), blitz::sleep(3ms));
        if (r.index() == 0) {
            if (auto v = std::get<0>(r))
                got.insert(*v);
            else
                rest = &slow_rx;
        } else if (r.index() == 1) {
            if (auto v = std::get<1>(r))
                got.insert(*v);
            else
                rest = &fast_rx;
        } else {
            ++idle_ticks;  // 3 ms with nothing from either channel
        }
    }
    while (auto v = co_await rest->recv()) got.insert(*v);
    co_await a;
    co_await b;
    std::printf("select: %zu values from two channels, %d idle ticks\n", got.size(), idle_ticks);
    int bad = got.size() != 25;

    // timeout: bound a call; the call is dropped when the time runs out.
    auto t = co_await blitz::timeout(20ms, slow_lookup());
    std::printf("timeout(20ms, slow_lookup()): %s\n",
                t.timed_out() ? "timed out" : t.value().c_str());
    bad += !t.timed_out();
    // ...and a generous one lets it finish.
    auto u = co_await blitz::timeout(5s, slow_lookup());
    std::printf("timeout(5s, slow_lookup()): %s\n",
                u.timed_out() ? "timed out" : u.value().c_str());
    bad += u.timed_out();
    co_return bad;
}

int main() {
    blitz::runtime rt;
    const int bad = rt.block_on(run());
    std::puts(bad == 0 ? "select_timeout: ok" : "select_timeout: WRONG");
    return bad == 0 ? 0 : 1;
}
