// Scheduler workloads with the definitions of Tokio's multi-threaded runtime benchmarks
// (benches/rt_multi_threaded.rs): where each spawn comes from and how completion is signalled
// are kept; plus skynet and fib by spawning. 4 workers as Tokio's benches use, and one per
// hardware thread. The peers (bench/peers/) run the same definitions.

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <semaphore>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"

std::uint64_t heap_allocs();  // spawn_bench.cpp counts every operator new

namespace {

constexpr int kSpawn = 10'000;
constexpr auto kStall = std::chrono::microseconds(10);

blitz::config workers(const benchmark::State& st) {
    blitz::config c;
    c.workers = static_cast<unsigned>(st.range(0));
    return c;
}

// Completion reaches the benchmark's plain thread through a blocking channel, as Tokio's
// benches use std::sync::mpsc.
using done_signal = std::counting_semaphore<1 << 20>;

void stall() {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < kStall) std::this_thread::yield();
}

// 10,000 spawns issued from inside a task of the runtime; each decrements a counter and the
// last signals the waiting plain thread.
void spawn_many_local(benchmark::State& st) {
    blitz::runtime rt(workers(st));
    std::atomic<int> rem{0};
    done_signal done(0);
    const std::uint64_t a0 = heap_allocs();
    for (auto _ : st) {
        rem.store(kSpawn, std::memory_order_relaxed);
        rt.block_on([](std::atomic<int>& rem, done_signal& done) -> blitz::task<void> {
            for (int i = 0; i < kSpawn; ++i) {
                blitz::spawn([](std::atomic<int>& rem, done_signal& done) -> blitz::task<void> {
                    if (rem.fetch_sub(1, std::memory_order_relaxed) == 1) done.release();
                    co_return;
                }(rem, done)).detach();
            }
            co_return;
        }(rem, done));
        done.acquire();
    }
    st.SetItemsProcessed(st.iterations() * kSpawn);
    st.counters["allocs/spawn"] = double(heap_allocs() - a0) / double(st.iterations() * kSpawn);
}

// 10,000 spawns from the plain thread, then one task awaits every handle.
template <class Handles>
blitz::task<void> await_all(Handles& hs) {
    for (auto& h : hs) co_await h;
    hs.clear();
}

void spawn_remote(benchmark::State& st, blitz::runtime& rt, int n) {
    std::vector<blitz::join_handle<void>> hs;
    hs.reserve(static_cast<std::size_t>(n));
    for (auto _ : st) {
        for (int i = 0; i < n; ++i) hs.push_back(rt.spawn([]() -> blitz::task<void> { co_return; }()));
        rt.block_on(await_all(hs));
    }
    st.SetItemsProcessed(st.iterations() * n);
}

void spawn_many_remote_idle(benchmark::State& st) {
    blitz::runtime rt(workers(st));
    spawn_remote(st, rt, kSpawn);
}

// Busy with 2 x workers tasks that yield and stall 10 us in a loop (a yield is a lower-priority
// notification than a spawn).
void spawn_many_remote_busy1(benchmark::State& st) {
    blitz::runtime rt(workers(st));
    std::atomic<bool> busy{true};
    std::vector<blitz::join_handle<void>> bg;
    for (unsigned i = 0; i < 2 * rt.num_workers(); ++i) {
        bg.push_back(rt.spawn([](std::atomic<bool>& busy) -> blitz::task<void> {
            while (busy.load(std::memory_order_relaxed)) {
                co_await blitz::yield_now();
                stall();
            }
        }(busy)));
    }
    spawn_remote(st, rt, kSpawn);
    busy = false;
    for (auto& h : bg) h.join();
}

// Busy with `workers` chains of tasks that stall 10 us and spawn their successor; 1,000 spawns.
blitz::task<void> busy_chain(std::atomic<bool>& busy) {
    if (busy.load(std::memory_order_relaxed)) {
        stall();
        blitz::spawn(busy_chain(busy)).detach();
    }
    co_return;
}

void spawn_many_remote_busy2(benchmark::State& st) {
    blitz::runtime rt(workers(st));
    std::atomic<bool> busy{true};
    for (unsigned i = 0; i < rt.num_workers(); ++i) rt.spawn(busy_chain(busy)).detach();
    spawn_remote(st, rt, 1'000);
    busy = false;
}

// 200 tasks spawned from the plain thread, each yielding 1,000 times, then signalling.
void yield_many(benchmark::State& st) {
    constexpr int kTasks = 200, kYields = 1'000;
    blitz::runtime rt(workers(st));
    done_signal done(0);
    for (auto _ : st) {
        for (int t = 0; t < kTasks; ++t) {
            rt.spawn([](done_signal& done) -> blitz::task<void> {
                for (int i = 0; i < kYields; ++i) co_await blitz::yield_now();
                done.release();
            }(done)).detach();
        }
        for (int t = 0; t < kTasks; ++t) done.acquire();
    }
    st.SetItemsProcessed(st.iterations() * kTasks * kYields);
}

// 1,000 rounds, each a task that spawns a responder and exchanges two oneshots with it; the
// last round signals the plain thread.
void ping_pong(benchmark::State& st) {
    constexpr int kPings = 1'000;
    blitz::runtime rt(workers(st));
    std::atomic<int> rem{0};
    done_signal done(0);
    for (auto _ : st) {
        rem.store(kPings, std::memory_order_relaxed);
        rt.block_on([](std::atomic<int>& rem, done_signal& done) -> blitz::task<void> {
            blitz::spawn([](std::atomic<int>& rem, done_signal& done) -> blitz::task<void> {
                for (int i = 0; i < kPings; ++i) {
                    blitz::spawn([](std::atomic<int>& rem, done_signal& done) -> blitz::task<void> {
                        auto [tx1, rx1] = blitz::oneshot<int>();
                        auto [tx2, rx2] = blitz::oneshot<int>();
                        blitz::spawn([](blitz::oneshot_receiver<int> rx1,
                                        blitz::oneshot_sender<int> tx2) -> blitz::task<void> {
                            (void)co_await rx1;
                            (void)std::move(tx2).send(1);
                        }(std::move(rx1), std::move(tx2))).detach();
                        (void)std::move(tx1).send(1);
                        (void)co_await rx2;
                        if (rem.fetch_sub(1, std::memory_order_relaxed) == 1) done.release();
                    }(rem, done)).detach();
                }
                co_return;
            }(rem, done)).detach();
            co_return;
        }(rem, done));
        done.acquire();
    }
    st.SetItemsProcessed(st.iterations() * kPings);
}

// A chain of 1,000 tasks, each spawning the next; the last signals the plain thread.
blitz::task<void> chain_link(done_signal& done, int n) {
    if (n == 0) {
        done.release();
    } else {
        blitz::spawn(chain_link(done, n - 1)).detach();
    }
    co_return;
}

void chained_spawn(benchmark::State& st) {
    constexpr int kChain = 1'000;
    blitz::runtime rt(workers(st));
    done_signal done(0);
    for (auto _ : st) {
        rt.block_on([](done_signal& done) -> blitz::task<void> {
            blitz::spawn(chain_link(done, kChain)).detach();
            co_return;
        }(done));
        done.acquire();
    }
    st.SetItemsProcessed(st.iterations() * kChain);
}

// skynet: a tree of 10^6 leaves with fan-out 10; the sum of leaf numbers is 499999500000.
blitz::task<std::uint64_t> skynet(std::uint64_t num, std::uint64_t size) {
    if (size == 1) co_return num;
    std::vector<blitz::join_handle<std::uint64_t>> hs;
    hs.reserve(10);
    const std::uint64_t sub = size / 10;
    for (std::uint64_t i = 0; i < 10; ++i) hs.push_back(blitz::spawn(skynet(num + i * sub, sub)));
    std::uint64_t sum = 0;
    for (auto& h : hs) sum += co_await h;
    co_return sum;
}

void skynet_1m(benchmark::State& st) {
    blitz::runtime rt(workers(st));
    for (auto _ : st) {
        const std::uint64_t sum = rt.block_on(skynet(0, 1'000'000));
        if (sum != 499999500000ull) st.SkipWithError("skynet: wrong sum");
    }
    st.SetItemsProcessed(st.iterations() * 1'111'111);  // tasks per tree
}

// fib(n) by spawning both halves down to n < 2.
blitz::task<std::uint64_t> fib(int n) {
    if (n < 2) co_return static_cast<std::uint64_t>(n);
    auto a = blitz::spawn(fib(n - 1));
    auto b = blitz::spawn(fib(n - 2));
    co_return co_await a + co_await b;
}

void fib_30(benchmark::State& st) {
    blitz::runtime rt(workers(st));
    for (auto _ : st) {
        if (rt.block_on(fib(30)) != 832040) st.SkipWithError("fib: wrong value");
    }
    st.SetItemsProcessed(st.iterations() * 2'692'537);  // calls in fib(30)
}

// Worker counts: Tokio's 4, and one per hardware thread.
void worker_args(benchmark::internal::Benchmark* b) {
    b->Arg(4);
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    if (hw != 4) b->Arg(hw);
    b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(spawn_many_local)->Apply(worker_args);
BENCHMARK(spawn_many_remote_idle)->Apply(worker_args);
BENCHMARK(spawn_many_remote_busy1)->Apply(worker_args);
BENCHMARK(spawn_many_remote_busy2)->Apply(worker_args);
BENCHMARK(yield_many)->Apply(worker_args);
BENCHMARK(ping_pong)->Apply(worker_args);
BENCHMARK(chained_spawn)->Apply(worker_args);
BENCHMARK(skynet_1m)->Apply(worker_args);
BENCHMARK(fib_30)->Apply(worker_args);

}  // namespace
