// SPDX-License-Identifier: MIT
// Debugging a running runtime: the stall detector, the latency histograms, the task dump and
// the inspect socket `blitz top` reads (issue 46; docs/guide/debugging.md).
//
// A request handler that makes a blocking call (here a 120 ms sleep standing in for a
// synchronous database client) holds its worker: every task queued behind it waits. The stall
// detector notices the poll that runs past config::stall_threshold and reports it once, with
// the task's spawn site and the worker's stack, so the blocking call is named in the report.
// The fix is to move such calls to the blocking pool (blitz::spawn_blocking). The program then
// prints the workers' latency histograms and the metrics in the OpenMetrics text a Prometheus
// scraper reads.
//
// Then a leak: a subscriber task waits on a channel whose sender was put in a registry nobody
// closes, so it waits forever, holding its frame. runtime::dump() lists every live task with
// the chain of coroutines it is suspended in and the awaitable at the bottom, which names it:
// consume_events -> channel recv. Exit status 0 when the stall was reported (with the
// handler's frame in its stack), the fixed version was not, and the dump shows the leaked
// subscriber.
//
// With --serve the runtime also serves its inspect socket (config::inspect_socket = "auto")
// and the program runs until SIGINT or SIGTERM: `blitz top --attach <pid>` shows it live.
//
//   build/release/example_debugging [--serve]

#include <signal.h>
#include <unistd.h>

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

// The leak: a subscriber whose channel's sender sits in a registry that is never closed.
struct event_registry {
    std::mutex mu;
    std::vector<blitz::sender<int>> subscribers;  // nobody removes or closes these
};

blitz::task<int> next_event(blitz::receiver<int>& rx) {
    auto v = co_await rx.recv();
    co_return v.value_or(-1);
}

blitz::task<void> consume_events(blitz::receiver<int> rx) {
    for (;;) {
        const int event = co_await next_event(rx);
        if (event < 0) co_return;  // the channel closed
    }
}

int main(int argc, char** argv) {
    const bool serve = argc > 1 && std::string(argv[1]) == "--serve";
    if (argc > 1 && !serve) {
        std::fprintf(stderr, "usage: %s [--serve]\n", argv[0]);
        return 2;
    }
    // --serve waits for SIGINT/SIGTERM with sigwait: blocked before any thread starts, so
    // every thread inherits the mask and the signal waits for this one.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    if (serve) pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::mutex mu;
    std::vector<blitz::stall_report> reports;
    blitz::config c;
    c.workers = 2;
    c.stall_threshold = 50ms;              // the default
    if (serve) c.inspect_socket = "auto";  // $XDG_RUNTIME_DIR or /tmp/blitz-<uid>, 0600
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

    // The leak, and the dump that finds it.
    event_registry registry;
    auto [tx, rx] = blitz::channel<int>(16);
    {
        std::lock_guard<std::mutex> l(registry.mu);
        registry.subscribers.push_back(std::move(tx));
    }
    auto subscriber = rt.spawn(consume_events(std::move(rx)));
    blitz::runtime_dump dump;
    bool leak_seen = false;
    // A freshly spawned task shows once it first waits: ask until it does (a few dumps).
    for (int i = 0; i < 1000 && !leak_seen; ++i) {
        dump = rt.dump();
        for (const auto& t : dump.tasks) {
            leak_seen = leak_seen ||
                        (t.id == subscriber.id() && t.waiting_on.kind == "channel recv" &&
                         t.chain.size() == 2 && t.chain[1].find("next_event") != std::string::npos);
        }
        if (!leak_seen) std::this_thread::yield();
    }
    std::printf("%s", dump.to_string().c_str());

    if (serve) {
        std::printf("serving the inspect socket; try: blitz top --attach %ld\n", (long)getpid());
        std::fflush(stdout);
        int sig = 0;
        sigwait(&stop_signals, &sig);
    }

    bool ok = after_bug == 1 && after_fix == 1 && leak_seen;
    if (!leak_seen)
        std::fprintf(stderr, "debugging: the dump did not show the leaked subscriber\n");
    if (ok) {
        const blitz::stall_report& r = reports.front();
        bool named = false;
        for (const auto& f : r.stack) named = named || f.find("legacy_lookup") != std::string::npos;
        // Without the stack signal's answer (a sanitizer can delay it) the report has no stack.
        ok = named || r.stack.empty();
        if (!ok) std::fprintf(stderr, "debugging: the report's stack does not name the call\n");
    } else if (after_bug != 1 || after_fix != 1) {
        std::fprintf(stderr, "debugging: expected one stall report, got %zu then %zu\n", after_bug,
                     after_fix);
    }
    std::printf("%s\n", ok ? "ok: the blocking call was reported, the fixed one was not, and the "
                             "dump names the leaked subscriber"
                           : "FAILED");
    subscriber.abort();
    return ok ? 0 : 1;
}
