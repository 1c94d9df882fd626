// SPDX-License-Identifier: MIT
// Sync primitives and channels on the uncontended path: time per operation and heap
// allocations per operation (issue 6 asks for none; the benchmark issue compares with Tokio).

#include <benchmark/benchmark.h>

#include <cstdint>

#include "blitz/blitz.hpp"

std::uint64_t heap_allocs_this_thread();  // spawn_bench.cpp counts every operator new

namespace {

// Runs a task of `kOps` operations per benchmark iteration and reports heap allocations per
// operation, counted inside the task on the worker's thread (one worker: the task cannot
// migrate, and allocations by other threads of the process are not counted). `make(n)` returns that
// task: it runs one warm-up operation, then n counted ones, and returns the allocations made during
// the counted ones.
constexpr int kOps = 10'000;

template <class Make>
void run_ops(benchmark::State& st, Make make) {
    blitz::config c;
    c.workers = 1;
    blitz::runtime rt(c);
    std::uint64_t allocs = 0;
    for (auto _ : st) allocs += rt.block_on(make(kOps));
    st.SetItemsProcessed(st.iterations() * kOps);
    st.counters["heap_allocs/op"] = double(allocs) / double(st.iterations() * kOps);
}

// The body of one operation, written once: warm-up, then the counted loop.
#define BLITZ_OPS(...)                                          \
    [&](int n) -> blitz::task<std::uint64_t> {                  \
        {                                                       \
            __VA_ARGS__                                         \
        }                                                       \
        const std::uint64_t before = heap_allocs_this_thread(); \
        for (int i = 0; i < n; ++i) {                           \
            __VA_ARGS__                                         \
        }                                                       \
        co_return heap_allocs_this_thread() - before;           \
    }

void BM_mutex_lock_unlock(benchmark::State& st) {
    blitz::mutex m;
    run_ops(st, BLITZ_OPS(auto g = co_await m.lock();));
}
BENCHMARK(BM_mutex_lock_unlock)->UseRealTime();

void BM_semaphore_acquire_release(benchmark::State& st) {
    blitz::semaphore s(4);
    run_ops(st, BLITZ_OPS(auto p = co_await s.acquire(2);));
}
BENCHMARK(BM_semaphore_acquire_release)->UseRealTime();

void BM_rwlock_read(benchmark::State& st) {
    blitz::rwlock l;
    run_ops(st, BLITZ_OPS(auto g = co_await l.read();));
}
BENCHMARK(BM_rwlock_read)->UseRealTime();

void BM_notify_one_then_wait(benchmark::State& st) {
    blitz::notify nt;
    run_ops(st, BLITZ_OPS(nt.notify_one(); co_await nt.notified();));
}
BENCHMARK(BM_notify_one_then_wait)->UseRealTime();

void BM_channel_send_recv(benchmark::State& st) {
    auto [tx, rx] = blitz::channel<std::uint64_t>(1024);
    run_ops(st, BLITZ_OPS((void)co_await tx.send(1); (void)co_await rx.recv();));
}
BENCHMARK(BM_channel_send_recv)->UseRealTime();

void BM_unbounded_send_recv(benchmark::State& st) {
    auto [tx, rx] = blitz::unbounded_channel<std::uint64_t>();
    run_ops(st, BLITZ_OPS((void)tx.send(1); (void)co_await rx.recv();));
}
BENCHMARK(BM_unbounded_send_recv)->UseRealTime();

void BM_broadcast_send_recv(benchmark::State& st) {
    auto [tx, rx] = blitz::broadcast<std::uint64_t>(64);
    run_ops(st, BLITZ_OPS(tx.send(1); (void)co_await rx.recv();));
}
BENCHMARK(BM_broadcast_send_recv)->UseRealTime();

void BM_watch_send_changed(benchmark::State& st) {
    auto [tx, rx] = blitz::watch<std::uint64_t>(0);
    run_ops(st, BLITZ_OPS(tx.send(1); (void)co_await rx.changed(); (void)rx.borrow_and_update();));
}
BENCHMARK(BM_watch_send_changed)->UseRealTime();

// A oneshot allocates its shared state once per channel (as Tokio's does).
void BM_oneshot_create_send_recv(benchmark::State& st) {
    run_ops(st, BLITZ_OPS(auto [tx, rx] = blitz::oneshot<std::uint64_t>();
                          (void)std::move(tx).send(1); (void)co_await rx;));
}
BENCHMARK(BM_oneshot_create_send_recv)->UseRealTime();

}  // namespace
