// Micro-benchmarks of the runtime core: spawn+join round trips and the local ring.

#include <benchmark/benchmark.h>

#include <vector>

#include "blitz/blitz.hpp"
#include "sched/global_queue.hpp"
#include "sched/local_queue.hpp"
#include "sched/test_support.hpp"

namespace {

blitz::task<int> leaf(int i) { co_return i; }

blitz::task<long> spawn_many(int n) {
    std::vector<blitz::join_handle<int>> hs;
    hs.reserve(n);
    for (int i = 0; i < n; ++i) hs.push_back(blitz::spawn(leaf(i)));
    long s = 0;
    for (auto& h : hs) s += co_await h;
    co_return s;
}

// Tokio's spawn_many_local shape: one task spawns N and awaits them all.
void BM_spawn_many_local(benchmark::State& st) {
    blitz::config cfg;
    cfg.workers = static_cast<unsigned>(st.range(1));
    blitz::runtime rt(cfg);
    const int n = static_cast<int>(st.range(0));
    auto before = rt.metrics();
    for (auto _ : st) benchmark::DoNotOptimize(rt.block_on(spawn_many(n)));
    auto after = rt.metrics();
    st.SetItemsProcessed(st.iterations() * n);
    double allocs = double(after.task_allocations - before.task_allocations);
    st.counters["allocs/task"] = allocs / double(st.iterations() * (n + 1));
    st.counters["bytes/task"] =
        double(after.task_bytes_allocated - before.task_bytes_allocated) / allocs;
}
BENCHMARK(BM_spawn_many_local)->Args({10000, 1})->Args({10000, 2})->UseRealTime();

blitz::task<void> yielder(int n) {
    for (int i = 0; i < n; ++i) co_await blitz::yield_now();
}
void BM_yield_many(benchmark::State& st) {
    blitz::config cfg;
    cfg.workers = 2;
    blitz::runtime rt(cfg);
    for (auto _ : st) rt.block_on(yielder(static_cast<int>(st.range(0))));
    st.SetItemsProcessed(st.iterations() * st.range(0));
}
BENCHMARK(BM_yield_many)->Arg(10000)->UseRealTime();

void BM_local_queue_push_pop(benchmark::State& st) {
    blitz::detail::testing::header_pool pool(256);
    blitz::detail::global_queue g;
    blitz::detail::local_queue q;
    for (auto _ : st) {
        for (int i = 0; i < 128; ++i) q.push(pool.at(i), g);
        for (int i = 0; i < 128; ++i) benchmark::DoNotOptimize(q.pop());
    }
    st.SetItemsProcessed(st.iterations() * 128);
}
BENCHMARK(BM_local_queue_push_pop);

}  // namespace

BENCHMARK_MAIN();
