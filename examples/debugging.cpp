// SPDX-License-Identifier: MIT
// Debugging a running runtime: the stall detector and the latency histograms (issue 46).
//
// A request handler that makes a blocking call (here a 120 ms sleep standing in for a
// synchronous database client) holds its worker: every task queued behind it waits. The stall
// detector notices the poll that runs past config::stall_threshold and reports it once, with
// the task's spawn site and the worker's stack, so the blocking call is named in the report.
// The fix is to move such calls to the blocking pool (blitz::spawn_blocking). The program then
// prints the workers' latency histograms and the metrics in the OpenMetrics text a Prometheus
// scraper reads. Exit status 0 when the stall was reported, with the handler's frame in its
// stack, and the fixed version was not.
//
//   build/release/example_debugging

#include <atomic>
#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

// The bug: a synchronous call on a worker.
[[gnu::noinline]] void legacy_lookup() { std::this_thread::sleep_for(120ms); }

blitz::task<int> handle_request_blocking(int id) {
    legacy_lookup();
    co_return id;
}

// The fix: the same call on the blocking pool; the worker runs other tasks meanwhile.
blitz::task<int> handle_request_fixed(int id) {
    co_await blitz::spawn_blocking([] { legacy_lookup(); });
    co_return id;
}

int main() {
    std::mutex mu;
    std::vector<blitz::stall_report> reports;
    blitz::config c;
    c.workers = 2;
    c.stall_threshold = 50ms;  // the default
    // A service would log the report (the default hook writes it to stderr); this one keeps it.
    c.on_stall = [&](const blitz::stall_report& r) {
        std::fputs(r.to_string().c_str(), stderr);
        std::lock_guard<std::mutex> l(mu);
        reports.push_back(r);
    };
    blitz::runtime rt(c);

    rt.block_on(handle_request_blocking(1));
    const std::size_t after_bug = [&] {
        std::lock_guard<std::mutex> l(mu);
        return reports.size();
    }();
    rt.block_on(handle_request_fixed(2));
    const std::size_t after_fix = [&] {
        std::lock_guard<std::mutex> l(mu);
        return reports.size();
    }();

    // Some ordinary work, for the histograms.
    rt.block_on([]() -> blitz::task<void> {
        std::vector<blitz::join_handle<void>> hs;
        for (int i = 0; i < 2000; ++i) {
            hs.push_back(blitz::spawn([]() -> blitz::task<void> {
                for (int k = 0; k < 4; ++k) co_await blitz::yield_now();
            }()));
        }
        for (auto& h : hs) co_await h;
    }());

    const blitz::runtime_metrics m = rt.metrics();
    const auto poll = m.merged(&blitz::worker_metrics::poll_ns);
    const auto sched = m.merged(&blitz::worker_metrics::schedule_ns);
    std::printf("poll time: %llu polls timed, p50 <= %llu ns, p99 <= %llu ns, max <= %llu ns\n",
                (unsigned long long)poll.count(), (unsigned long long)poll.quantile_ns(0.5),
                (unsigned long long)poll.quantile_ns(0.99),
                (unsigned long long)poll.quantile_ns(1.0));
    std::printf("schedule latency: %llu wakes followed, p50 <= %llu ns, p99 <= %llu ns\n",
                (unsigned long long)sched.count(), (unsigned long long)sched.quantile_ns(0.5),
                (unsigned long long)sched.quantile_ns(0.99));
    std::printf("stalls: %llu found, longest %llu ms\n", (unsigned long long)m.stalls,
                (unsigned long long)(m.longest_stall_ns / 1'000'000));
    // The first lines of what a /metrics endpoint would serve.
    const std::string text = m.to_openmetrics();
    std::printf("%s...\n", text.substr(0, text.find("# TYPE blitz_worker_ticks")).c_str());

    bool ok = after_bug == 1 && after_fix == 1;
    if (ok) {
        const blitz::stall_report& r = reports.front();
        bool named = false;
        for (const auto& f : r.stack) named = named || f.find("legacy_lookup") != std::string::npos;
        // Without the stack signal's answer (a sanitizer can delay it) the report has no stack.
        ok = named || r.stack.empty();
        if (!ok) std::fprintf(stderr, "debugging: the report's stack does not name the call\n");
    } else {
        std::fprintf(stderr, "debugging: expected one stall report, got %zu then %zu\n", after_bug,
                     after_fix);
    }
    std::printf("%s\n",
                ok ? "ok: the blocking call was reported, the fixed one was not" : "FAILED");
    return ok ? 0 : 1;
}
