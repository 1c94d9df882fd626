// SPDX-License-Identifier: MIT
// wake_stages: where the wake latency of an idle runtime goes (issue 21). A plain thread sends
// on a oneshot that a task on a parked runtime awaits, as the wake_latency row of `blitz bench`
// does, and the runtime's probes time what happens in between:
//   send        the sending thread's own cost: the wake, the global-queue push, the claim of a
//               parked worker and its futex wake (send called to send returned)
//   to unpark   send called to the claimed worker back from its futex (the kernel's wake and
//               the worker's way out of park(): unmark and its claim token)
//   to poll     back from the futex to the task's poll (the run loop: tick start, timers and
//               driver, the search and the global fetch)
//   to resume   the poll's start to the task's code after its co_await (the poll itself)
//   total       send called to the task running again (what the wake_latency row reports)
// Probe timestamps count from the runtime's start; they are placed on the steady clock by the
// smallest resume-minus-poll difference seen (the poll always precedes the resume, so this
// places every probe at most that difference late, some tens of nanoseconds).
//   wake_stages [--workers N] [--samples N]      (defaults: 1 worker, 300 samples)

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"

namespace {

using steady = std::chrono::steady_clock;

struct sample {
    std::int64_t send = 0, sent = 0, resumed = 0;  // steady clock, ns since its epoch
    std::int64_t unpark = -1, poll = -1;           // probe times, ns since the runtime started
};

std::int64_t ns_of(steady::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

unsigned arg(int argc, char** argv, const char* name, unsigned dflt) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], name) == 0) return static_cast<unsigned>(std::atoi(argv[i + 1]));
    }
    return dflt;
}

}  // namespace

int main(int argc, char** argv) {
    const unsigned workers = arg(argc, argv, "--workers", 1);
    const unsigned n = arg(argc, argv, "--samples", 300);
    if (workers == 0 || n == 0) {
        std::fprintf(stderr, "usage: wake_stages [--workers N] [--samples N]\n");
        return 2;
    }
    blitz::config c;
    c.workers = workers;
    c.probes = true;
    blitz::runtime rt(c);
    std::vector<sample> s(n);
    std::vector<blitz::probe_event> events;
    for (unsigned i = 0; i < n; ++i) {
        auto [tx, rx] = blitz::oneshot<int>();
        auto h = rt.spawn([](blitz::oneshot_receiver<int> rx) -> blitz::task<std::int64_t> {
            (void)co_await rx;
            co_return ns_of(steady::now());
        }(std::move(rx)));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // every worker parks
        (void)rt.take_probes();  // only this sample's events from here on
        s[i].send = ns_of(steady::now());
        (void)std::move(tx).send(1);
        s[i].sent = ns_of(steady::now());
        s[i].resumed = h.join();
        // The first claimed unpark after the send, then that worker's first poll after it.
        const blitz::probe_streams p = rt.take_probes();
        std::int64_t best_unpark = std::numeric_limits<std::int64_t>::max();
        std::size_t who = 0;
        for (std::size_t w = 0; w < p.workers.size(); ++w) {
            for (const auto& e : p.workers[w]) {
                if (e.kind == blitz::probe_kind::unpark && e.a == 0 &&
                    static_cast<std::int64_t>(e.ns) < best_unpark) {
                    best_unpark = static_cast<std::int64_t>(e.ns);
                    who = w;
                }
            }
        }
        if (best_unpark == std::numeric_limits<std::int64_t>::max()) continue;
        s[i].unpark = best_unpark;
        for (const auto& e : p.workers[who]) {
            if (e.kind == blitz::probe_kind::poll &&
                static_cast<std::int64_t>(e.ns) >= best_unpark) {
                s[i].poll = static_cast<std::int64_t>(e.ns);
                break;
            }
        }
    }
    // The runtime's start on the steady clock: resume - poll is never negative.
    std::int64_t start = std::numeric_limits<std::int64_t>::max();
    for (const auto& x : s) {
        if (x.poll >= 0) start = std::min(start, x.resumed - x.poll);
    }
    std::vector<double> send, to_unpark, to_poll, to_resume, total;
    unsigned matched = 0;
    for (const auto& x : s) {
        total.push_back(static_cast<double>(x.resumed - x.send) / 1e3);
        send.push_back(static_cast<double>(x.sent - x.send) / 1e3);
        if (x.unpark < 0 || x.poll < 0) continue;
        ++matched;
        to_unpark.push_back(static_cast<double>(start + x.unpark - x.send) / 1e3);
        to_poll.push_back(static_cast<double>(x.poll - x.unpark) / 1e3);
        to_resume.push_back(static_cast<double>(x.resumed - (start + x.poll)) / 1e3);
    }
    std::printf("wake_stages: %u worker(s), %u samples (%u with a claimed unpark and its poll)\n\n",
                workers, n, matched);
    std::printf("| stage | p10 us | p50 us | p90 us | p99 us |\n|---|---|---|---|---|\n");
    const auto row = [](const char* name, const std::vector<double>& v) {
        std::printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", name, pct(v, 0.10), pct(v, 0.50),
                    pct(v, 0.90), pct(v, 0.99));
    };
    row("send (the sender's own cost)", send);
    row("send to unpark (futex wake, out of park)", to_unpark);
    row("unpark to poll (run loop, search, fetch)", to_poll);
    row("poll to resume", to_resume);
    row("total (send to the task running)", total);
    return 0;
}
