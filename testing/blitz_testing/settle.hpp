// SPDX-License-Identifier: MIT
#pragma once
// settle(): wait until a runtime is quiescent (every worker parked or, in busy mode, spinning;
// nobody searching) and return its metrics. Counters that two sides update at different moments (a
// claim and the claimed worker's wake, say) agree only at quiescence, so checks that compare them
// read them here.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace blitz::workloads {

// Polls the metrics up to `attempts` times (bounded by count, not by a time verdict); returns the
// last snapshot, quiescent or not, for the caller to check. A snapshot is not atomic: a claim
// racing it (the last worker to finish notifying a parked one, say) can be half in it, with
// every worker still counted parked. So quiescence is two snapshots in a row, both fully parked
// with nobody searching, that agree on the claim, park and notified-wake counts.
//
// In busy mode (io_mode busy) idle workers spin instead of parking: there quiescence is two
// snapshots in a row with nobody searching, no task polled in between, and every worker looking
// at the driver in between (spinning, not stuck in a task).
// True when exactly workers 0 .. n - 1 have their bits set in the parked bitmap (a word per 64
// workers): every worker of an n-worker runtime parked (I2, I7).
inline bool parked_exactly_first(const runtime_metrics& m, unsigned n) {
    for (std::size_t k = 0; k < m.parked_bitmap.size(); ++k) {
        const unsigned lo = static_cast<unsigned>(k) * 64;
        const unsigned in = n <= lo ? 0 : std::min(n - lo, 64u);
        const std::uint64_t want = in == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << in) - 1;
        if (m.parked_bitmap[k] != want) return false;
    }
    return n <= m.parked_bitmap.size() * 64;
}

// True if two snapshots of `rt`, taken some time apart (a before b), show it at rest: every
// worker parked (or spinning, in busy mode) and nobody searching in both, with no claim, park or
// notified wake between them (so no wake was in flight when either was taken).
inline bool at_rest_between(const runtime& rt, const runtime_metrics& a, const runtime_metrics& b) {
    auto quiet = [&](const runtime_metrics& m) {
        const bool all_idle = m.io_mode == "busy" || m.num_parked == rt.num_workers();
        return all_idle && m.num_searching == 0;
    };
    auto spinning = [](const runtime_metrics& a, const runtime_metrics& b) {
        if (b.io_mode != "busy") return true;
        if (a.total(&worker_metrics::polls) != b.total(&worker_metrics::polls)) return false;
        for (std::size_t i = 0; i < a.workers.size() && i < b.workers.size(); ++i) {
            if (b.workers[i].busy_polls <= a.workers[i].busy_polls) return false;
        }
        return true;
    };
    auto same = [](const runtime_metrics& a, const runtime_metrics& b) {
        return a.claims == b.claims &&
               a.total(&worker_metrics::parks) == b.total(&worker_metrics::parks) &&
               a.total(&worker_metrics::unparks_notified) ==
                   b.total(&worker_metrics::unparks_notified);
    };
    return quiet(a) && quiet(b) && same(a, b) && spinning(a, b);
}

// Waits (100 us between snapshots, at most `attempts` of them) until the runtime is at rest and
// returns the last snapshot; it may not be at rest if the attempts ran out.
// Waits (at most `attempts` x 100 us) until no I/O completion operation is in flight and
// returns the metrics. A socket closed by a task (a listener's multishot accept, a stream's
// multishot receive) has its operation cancelled, and the final completion is reaped by the
// worker whose ring runs it, a moment after the closing task finished.
inline runtime_metrics settle_ops(const runtime& rt, int attempts = 100'000) {
    runtime_metrics m = rt.metrics();
    for (int i = 0; i < attempts && m.io_ops_in_flight != 0; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        m = rt.metrics();
    }
    return m;
}

inline runtime_metrics settle(const runtime& rt, int attempts = 100'000) {
    runtime_metrics m = rt.metrics();
    for (int i = 0; i < attempts; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        runtime_metrics next = rt.metrics();
        const bool settled = at_rest_between(rt, m, next);
        m = std::move(next);
        if (settled) break;
    }
    return m;
}

// For tests with a one-shot hook inside the idle protocol (config::debug's before_park_commit,
// on_park_spin): from rest, arms the hook and spawns trivial tasks from this thread, one at a
// time and letting the runtime come to rest after each, until the hook says it has `fired`.
// Each spawn wakes a worker that runs it and goes idle again, through the hooked step.
inline void spawn_until_fired(runtime& rt, std::atomic<bool>& armed,
                              const std::atomic<bool>& fired) {
    (void)settle(rt);
    armed.store(true);
    while (!fired.load(std::memory_order_acquire)) {
        rt.spawn([]() -> task<void> { co_return; }()).join();
        (void)settle(rt);
    }
}

}  // namespace blitz::workloads
