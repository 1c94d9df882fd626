// SPDX-License-Identifier: MIT
// The report's workloads (bench/common/bench_workloads.cpp: the scheduler workloads with the
// definitions of Tokio's multi-threaded runtime benchmarks, skynet, fib, the primitives and the
// timers) as Google Benchmark rows, 4 workers as Tokio's benches use and one per hardware
// thread. Each iteration's time is the workload's own measurement (set-up excluded).
// `blitz bench` runs the same definitions interleaved with the peers and writes the report.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <thread>

#include "bench_workloads.hpp"
#include "blitz/blitz.hpp"

namespace {

void run_workload(benchmark::State& st, const blitz::bench::workload& w) {
    blitz::config c;
    c.workers = static_cast<unsigned>(st.range(0));
    blitz::runtime rt(c);
    for (auto _ : st) {
        try {
            st.SetIterationTime(w.run(rt).ns / 1e9);
        } catch (const std::exception& e) {
            st.SkipWithError(e.what());
            break;
        }
    }
    if (w.group != blitz::bench::kind::latency) st.SetItemsProcessed(st.iterations() * w.ops);
}

const bool registered = [] {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    for (const auto& w : blitz::bench::workloads()) {
        auto* b = benchmark::RegisterBenchmark(("workload/" + w.name).c_str(),
                                               [&w](benchmark::State& st) { run_workload(st, w); });
        b->Arg(4);
        if (hw != 4) b->Arg(hw);
        b->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
    return true;
}();

}  // namespace
