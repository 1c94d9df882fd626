// SPDX-License-Identifier: MIT
// oneshot_floor: what a oneshot costs with and without its allocation (issue 21). The
// oneshot_try_recv row (create, send, try_recv, drop) has the target 0.25x Tokio. Stop 35
// argued that one atomic RMW was the floor and put it out of reach. This measures the same
// protocol, detail::oneshot_state's one-CAS send and its plain-load receive, on a state that
// lives on the stack (what an inline, non-allocating oneshot would run), beside
// blitz::oneshot<int>() with its cached allocation and two handles.
//   oneshot_floor [--ops N] [--reps N]     (defaults 10,000,000 and 7)
// Also the least a one-CAS protocol can cost (minimal_oneshot), blitz::oneshot_cell, and the
// same for barrier_new_1 (a bare fetch_add, and blitz::barrier's steps). Prints the minimum ns
// per operation of each, over the repetitions.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "blitz/blitz.hpp"

namespace {

using state = blitz::detail::oneshot_state<int>;

// The sender's and the receiver's steps of the handle pair (oneshot_sender::send,
// oneshot_receiver::try_recv) on a state that nobody frees: it dies with the frame.
__attribute__((noinline)) int inline_oneshot(int v) {
    state s;
    if (s.bits.load(std::memory_order_acquire) & state::rx_gone) return -1;
    s.value.emplace(v);
    if (s.sender_finish(state::sent | state::tx_gone)) return -1;  // never: no receiver left
    const std::uint32_t b = s.bits.load(std::memory_order_acquire);
    if (!(b & state::sent) || !s.value) return -2;
    return *std::exchange(s.value, std::nullopt);
}

// The least a one-CAS oneshot can do: a flags word, a value slot and an empty waker slot on the
// stack; the send publishes with one compare-exchange (as sender_finish does, without its
// out-of-line call and its paths for a registered waker or a receiver already gone), the
// receive is a plain load.
__attribute__((noinline)) int minimal_oneshot(int v) {
    struct cell {
        std::atomic<std::uint32_t> bits{0};
        void* waker = nullptr;
        std::optional<int> value;
    } s;
    if (s.bits.load(std::memory_order_acquire) & state::rx_gone) return -1;
    s.value.emplace(v);
    std::uint32_t b = s.bits.load(std::memory_order_relaxed);
    const std::uint32_t add = state::sent | state::tx_gone;
    while (!s.bits.compare_exchange_weak(b,
                                         b | add | ((b & state::rx_waiting) ? 0 : state::tx_done),
                                         std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }
    if (!(s.bits.load(std::memory_order_acquire) & state::sent) || !s.value || s.waker) return -2;
    return *std::exchange(s.value, std::nullopt);
}

__attribute__((noinline)) int allocated_oneshot(int v) {
    auto [tx, rx] = blitz::oneshot<int>();
    (void)std::move(tx).send(v);
    const auto got = rx.try_recv();
    return got ? *got : -2;
}

// blitz::oneshot_cell<int>: the state inside the cell, on the stack; its sender claims the cell
// before it writes (a second atomic RMW, on the sender's own word).
__attribute__((noinline)) int cell_oneshot(int v) {
    blitz::oneshot_cell<int> cell;
    (void)cell.make_sender().send(v);
    const auto got = cell.try_recv();
    return got ? *got : -2;
}

// barrier_new_1's floor (its target is 0.04x Tokio): a one-party barrier's arrival is one
// relaxed fetch_add on its generation count. Measured bare, on a stack word, and as
// blitz::barrier's own steps (made, its wait's ready path, destroyed) without the co_await.
__attribute__((noinline)) int bare_fetch_add(int v) {
    std::atomic<std::size_t> generation{0};
    return static_cast<int>(generation.fetch_add(1, std::memory_order_relaxed)) + v;
}
__attribute__((noinline)) int barrier_steps(int v) {
    blitz::barrier b(1);
    auto w = b.wait();
    return w.await_ready() && w.await_resume().is_leader() ? v : -2;
}

template <class F>
double min_ns(F f, long ops, int reps) {
    double best = 1e18;
    for (int r = 0; r < reps; ++r) {
        long sum = 0;
        const auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < ops; ++i) sum += f(static_cast<int>(i & 0xffff));
        const double ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        if (sum < 0) std::fprintf(stderr, "a oneshot failed\n");
        best = std::min(best, ns / static_cast<double>(ops));
    }
    return best;
}

long arg(int argc, char** argv, const char* name, long dflt) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], name) == 0) return std::atol(argv[i + 1]);
    }
    return dflt;
}

}  // namespace

int main(int argc, char** argv) {
    const long ops = arg(argc, argv, "--ops", 10'000'000);
    const int reps = static_cast<int>(arg(argc, argv, "--reps", 7));
    if (ops <= 0 || reps <= 0) {
        std::fprintf(stderr, "usage: oneshot_floor [--ops N] [--reps N]\n");
        return 2;
    }
    blitz::config c;
    c.workers = 1;
    blitz::runtime rt(c);
    // On a worker, as the benchmark row runs: the allocation comes from its block cache.
    rt.block_on([](long ops, int reps) -> blitz::task<void> {
        std::printf("one CAS, a flags word and a value slot on the stack: %.2f ns a oneshot\n",
                    min_ns(minimal_oneshot, ops, reps));
        std::printf("detail::oneshot_state on the stack (no allocation): %.2f ns a oneshot\n",
                    min_ns(inline_oneshot, ops, reps));
        std::printf(
            "blitz::oneshot_cell<int> (state in the cell, on the stack): %.2f ns a oneshot\n",
            min_ns(cell_oneshot, ops, reps));
        std::printf("blitz::oneshot<int>() (cached allocation, two handles): %.2f ns a oneshot\n",
                    min_ns(allocated_oneshot, ops, reps));
        std::printf("one relaxed fetch_add on the stack (a one-party barrier's arrival): %.2f ns\n",
                    min_ns(bare_fetch_add, ops, reps));
        std::printf("blitz::barrier(1) made, its wait ready at once, destroyed: %.2f ns\n",
                    min_ns(barrier_steps, ops, reps));
        co_return;
    }(ops, reps));
    return 0;
}
