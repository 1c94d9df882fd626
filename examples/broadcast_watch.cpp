// SPDX-License-Identifier: MIT
// broadcast and watch. A broadcast channel hands every subscriber its own copy of each value; a
// subscriber that falls more than the capacity behind is told how many it missed (never a silent
// gap) and continues with the oldest value still held. A watch holds only the latest value: a
// watcher sees the newest version, skipping versions it was too slow for, and learns when the
// sender is gone. Exit status 0 when every subscriber accounted for all 100 events and the
// watcher ended on the last setting.
//
//   build/release/example_broadcast_watch

#include <blitz/blitz.hpp>
#include <cstdio>
#include <string>

struct tally {
    std::uint64_t values = 0, missed = 0;
};

blitz::task<tally> subscriber(blitz::broadcast_receiver<int> rx) {
    tally t;
    for (;;) {
        auto r = co_await rx.recv();
        if (r.closed()) break;
        if (r.lagged()) {
            t.missed += r.missed();  // the oldest values were overwritten; say how many
            continue;
        }
        ++t.values;
    }
    co_return t;
}

blitz::task<std::string> watcher(blitz::watch_receiver<std::string> rx) {
    std::string last = rx.borrow();
    int seen = 1;
    while (co_await rx.changed()) {  // false once the sender is gone and the last was read
        last = rx.borrow();
        ++seen;
    }
    std::printf("watch: saw %d of 4 versions, ending on \"%s\"\n", seen, last.c_str());
    co_return last;
}

blitz::task<int> run() {
    int bad = 0;

    auto [tx, rx] = blitz::broadcast<int>(8);  // each subscriber may be up to 8 behind
    auto fast = blitz::spawn(subscriber(tx.subscribe()));
    for (int i = 0; i < 100; ++i) {
        (void)tx.send(i);  // never waits: a full ring overwrites its oldest value
        if (i % 4 == 3) co_await blitz::yield_now();
    }
    {
        auto done = std::move(tx);
    }  // the last sender goes: subscribers drain and see the end
    // `rx` subscribed at the start but starts reading only now, 100 values later: it is told it
    // missed 92 and then reads the 8 the ring still holds.
    auto slow = blitz::spawn(subscriber(std::move(rx)));
    const tally f = co_await fast, s = co_await slow;
    std::printf("broadcast: fast subscriber %llu values + %llu missed, slow %llu + %llu\n",
                (unsigned long long)f.values, (unsigned long long)f.missed,
                (unsigned long long)s.values, (unsigned long long)s.missed);
    bad += f.values + f.missed != 100 || s.values != 8 || s.missed != 92;

    auto [set, get] = blitz::watch<std::string>("info");
    auto w = blitz::spawn(watcher(std::move(get)));
    set.send("debug");
    set.send("trace");
    co_await blitz::yield_now();
    set.send("warn");
    {
        auto done = std::move(set);
    }
    bad += co_await w != "warn";
    co_return bad;
}

int main() {
    blitz::runtime rt;
    const int bad = rt.block_on(run());
    std::puts(bad == 0 ? "broadcast_watch: ok" : "broadcast_watch: WRONG");
    return bad == 0 ? 0 : 1;
}
