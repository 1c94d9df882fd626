// SPDX-License-Identifier: MIT
#pragma once
// Reference workloads shared by the demo, the tests, the stress suite and (later) the
// conformance harness. Each returns a value whose correct result is known in closed form, so a
// lost or duplicated task shows up as a wrong answer.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "blitz/blitz.hpp"

namespace blitz::workloads {

// On a one-worker runtime: lets every runnable task run until it blocks (a yield puts the
// caller behind them).
inline task<void> let_others_run(int rounds = 4) {
    for (int i = 0; i < rounds; ++i) co_await yield_now();
}

// What a runtime made from `c` says when it refuses it (config_error's text), or "accepted".
inline std::string config_rejection(const config& c) {
    try {
        runtime rt(c);
    } catch (const config_error& e) {
        return e.what();
    }
    return "accepted";
}

// A string's bytes, for the I/O calls that take std::span<const std::byte>.
inline std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// A test echo server: accepts `connections` connections on `l`, each echoing what it reads
// until end of stream or an error, in a task of its own.
inline task<void> echo_server(net::tcp_listener l, int connections) {
    for (int c = 0; c < connections; ++c) {
        auto s = co_await l.accept();
        if (!s) co_return;
        spawn([](net::tcp_stream s) -> task<void> {
            std::array<std::byte, 4096> buf;
            for (;;) {
                auto n = co_await s.read(buf);
                if (!n || *n == 0) co_return;
                auto w = co_await s.write_all(std::span(buf.data(), *n));
                if (!w) co_return;
            }
        }(std::move(*s)))
            .detach();
    }
}

// A task that completes at once.
// Counts itself in `n` while it lives: a local of a task's frame makes `n` the number of such
// frames alive (a frame a cancellation or a shutdown failed to destroy stays counted).
template <class Int>
class frame_count {
public:
    explicit frame_count(std::atomic<Int>& n) : n_(n) { n_.fetch_add(1); }
    ~frame_count() { n_.fetch_sub(1); }
    frame_count(const frame_count&) = delete;
    frame_count& operator=(const frame_count&) = delete;

private:
    std::atomic<Int>& n_;
};

// X8's deterministic shape (the JoinSet tests and the checker), on a one-worker runtime: a set
// task sends on the select's first channel and finishes in the same poll, so when the selecting
// task runs again the channel wins and join_next loses with the outcome already there. Returns
// how many outcomes came out of the set afterwards: 1 when join_next took nothing.
inline int join_outcomes_after_lost_select(runtime& rt) {
    return rt.block_on([]() -> task<int> {
        join_set<int> set;
        auto [tx, rx] = channel<int>(1);
        auto [go_tx, go_rx] = channel<int>(1);
        set.spawn([](receiver<int> go, sender<int> tx) -> task<int> {
            (void)co_await go.recv();
            (void)tx.try_send(1);
            co_return 7;
        }(go_rx, tx));
        auto trigger = spawn([](sender<int> go) -> task<void> {
            co_await yield_now();
            (void)co_await go.send(1);
        }(go_tx));
        auto r = co_await select(rx.recv(), set.join_next());
        co_await trigger;
        int got = r.index() == 1 ? 1 : 0;  // join_next won after all: it delivered one
        while (auto o = co_await set.join_next()) got += o->has_value() ? 1 : 0;
        co_return got;
    }());
}

inline task<void> nothing() { co_return; }

inline task<unsigned long> leaf(unsigned long i) { co_return i; }

// Spawns n leaves from the calling task, awaits them all; returns n * (n - 1) / 2.
inline task<unsigned long> fan_out(unsigned long n) {
    std::vector<join_handle<unsigned long>> hs;
    hs.reserve(n);
    for (unsigned long i = 0; i < n; ++i) hs.push_back(spawn(leaf(i)));
    unsigned long sum = 0;
    for (auto& h : hs) sum += co_await h;
    co_return sum;
}

// Each link spawns the next and awaits it: n spawns, each from the previous task; returns n.
inline task<unsigned long> chain(unsigned long n) {
    if (n == 0) co_return 0;
    co_return 1 + co_await spawn(chain(n - 1));
}

// Skynet: a 10-ary tree of tasks whose leaves return their own number; with `size` leaves
// numbered from `num` it returns their sum (499999500000 for skynet(0, 1'000'000)).
inline task<std::uint64_t> skynet(std::uint64_t num, std::uint64_t size) {
    if (size == 1) co_return num;
    std::vector<join_handle<std::uint64_t>> hs;
    hs.reserve(10);
    const std::uint64_t sub = size / 10;
    for (std::uint64_t i = 0; i < 10; ++i) hs.push_back(spawn(skynet(num + i * sub, sub)));
    std::uint64_t sum = 0;
    for (auto& h : hs) sum += co_await h;
    co_return sum;
}

// A tree in which every node spawns `width` children down to `depth`; returns the node count,
// (width^(depth+1) - 1) / (width - 1).
inline task<unsigned long> tree(unsigned depth, unsigned width) {
    if (depth == 0) co_return 1;
    std::vector<join_handle<unsigned long>> hs;
    hs.reserve(width);
    for (unsigned i = 0; i < width; ++i) hs.push_back(spawn(tree(depth - 1, width)));
    unsigned long s = 1;
    for (auto& h : hs) s += co_await h;
    co_return s;
}

// An awaited fan-out tree (every node spawns `width` children down to `depth` and awaits them)
// in which every `every`-th node yields once before it spawns (G7, issue 15's overflow churn):
// the spawns overflow the ring, and each yield makes the next pick a periodic global check.
// Returns the node count, as tree() does.
inline task<unsigned long> yield_tree(unsigned depth, unsigned width, unsigned long every,
                                      unsigned long id = 0) {
    if (id % every == every - 1) co_await yield_now();
    if (depth == 0) co_return 1;
    std::vector<join_handle<unsigned long>> hs;
    hs.reserve(width);
    for (unsigned i = 0; i < width; ++i) {
        hs.push_back(spawn(yield_tree(depth - 1, width, every, id * width + i + 1)));
    }
    unsigned long s = 1;
    for (auto& h : hs) s += co_await h;
    co_return s;
}

// A yield storm: `tasks` self-waking tasks spawned from the calling task, each yielding `yields`
// times, all awaited. Keeps every worker busy with purely local work, then idles them together.
inline task<void> yield_storm(unsigned tasks, int yields) {
    std::vector<join_handle<void>> hs;
    hs.reserve(tasks);
    for (unsigned i = 0; i < tasks; ++i) {
        hs.push_back(spawn([](int n) -> task<void> {
            for (int k = 0; k < n; ++k) co_await yield_now();
        }(yields)));
    }
    for (auto& h : hs) co_await h;
}

}  // namespace blitz::workloads
