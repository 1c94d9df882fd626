// SPDX-License-Identifier: MIT
#pragma once
// Scenarios shared by the unit tests and the conformance checkers.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/suite.hpp"
#include "blitz_testing/test_event.hpp"
#include "sched/worker.hpp"

namespace blitz::workloads {

struct park_window_result {
    runtime_metrics metrics;  // read once the runtime settled
    bool lifo_stayed_empty;   // L4: the spawn in the window bypassed the worker's LIFO slot
};

// I4 at the protocol's narrowest point (1 worker): a task is spawned on the worker itself while
// it is the last searcher and about to park, so the producer sees a searcher and issues no wake.
// Only the last searcher's final check can find it; `skip_check` is the fault that removes that
// check, after which the task waits for the park timeout (counted as a timeout wake that found
// work). The hook is armed from a task on the worker, so nothing from this thread can rescue the
// task afterwards (join() pushes nothing).
// `lifo_fault` is L4's negative control (wakes from a parking worker still use its LIFO slot).
inline park_window_result park_window(bool skip_check, std::chrono::nanoseconds park_timeout,
                                      bool lifo_fault = false) {
    std::atomic<runtime*> target{nullptr};
    std::atomic<bool> armed{false}, spawned{false}, lifo_empty{true};
    join_handle<int> late;
    config c = conformance::fresh(1);
    c.park_timeout = park_timeout;
    c.debug.skip_last_searcher_check = skip_check;
    c.debug.lifo_while_parking = lifo_fault;
    c.debug.before_park_commit = [&](unsigned) {
        if (armed.exchange(false)) {
            late = target.load()->spawn([]() -> task<int> { co_return 42; }());
            if (detail::current_worker()->lifo_peek() != nullptr) lifo_empty = false;
            spawned.store(true, std::memory_order_release);
        }
    };
    runtime rt(c);
    target = &rt;
    rt.block_on([](std::atomic<bool>& a) -> task<void> {
        a = true;
        co_return;
    }(armed));
    while (!spawned.load(std::memory_order_acquire)) std::this_thread::yield();
    late.join();
    // A timeout wake that found work is counted at the end of that tick, after the task (and so
    // join()) completed: read the counters once the worker has parked again.
    return {settle(rt), lifo_empty.load()};
}

namespace detail_scenarios {
// Waits for its event, logs its name and wakes its partner, until `stop`: then it wakes the
// partner once more (so that it sees `stop` too) and ends. A pinger that counted rounds instead
// hung when a set landed on an event already set (the sets from outside the pair are not
// rounds).
inline task<void> pinger(char name, detail::testing::test_event& mine,
                         detail::testing::test_event& other, const bool& stop,
                         std::vector<char>& log) {
    for (;;) {
        co_await mine.wait();
        mine.reset();
        if (stop) break;      // one worker: only its thread writes it
        log.push_back(name);  // likewise
        other.set();          // wakes the partner into this worker's LIFO slot
    }
    other.set();
}
}  // namespace detail_scenarios

// L3: two tasks wake each other through the LIFO slot while a third waits in the ring (1
// worker). Returns how many ping-pong polls ran before the third task did: at most the LIFO
// cap when the cap works. `budget` and `phase` place the exchange in the tick: the first task
// yields `phase` times before it starts the pair, so that over phases 0 .. budget - 1 one run
// reaches the cap on a tick's last poll (the edge where a count restarted per tick let the pair
// run the cap's polls again). `tweak` adjusts the config (a fault flag, say).
inline std::size_t polls_before_queued_task(unsigned lifo_cap, unsigned budget = 128,
                                            unsigned phase = 0, void (*tweak)(config&) = nullptr) {
    using detail_scenarios::pinger;
    config c = conformance::fresh(1);
    c.lifo_polls_per_tick = lifo_cap;
    c.budget_per_tick = budget;
    if (tweak) tweak(c);
    runtime rt(c);
    std::vector<char> log;
    bool stop = false;
    detail::testing::test_event a, b;
    rt.block_on([](detail::testing::test_event& a, detail::testing::test_event& b, bool& stop,
                   std::vector<char>& log, unsigned phase) -> task<void> {
        auto ha = spawn(pinger('a', a, b, stop, log));
        auto hb = spawn(pinger('b', b, a, stop, log));
        for (unsigned i = 0; i < 4 + phase; ++i) co_await yield_now();  // both are now waiting
        auto hc = spawn([](std::vector<char>& l) -> task<void> {
            l.push_back('c');
            co_return;
        }(log));
        a.set();  // a goes to the LIFO slot, c is pushed to the ring
        co_await hc;
        stop = true;  // the pair ends at its next wake
        a.set();
        b.set();
        co_await ha;
        co_await hb;
    }(a, b, stop, log, phase));
    std::size_t n = 0;
    while (n < log.size() && log[n] != 'c') ++n;
    return n;
}

// B2's scenario: on one worker, a task loops `steps` times over awaits on an always-ready
// resource (kind 0: a mutex lock; kind 1: a send and a receive on a capacity-1 channel) while
// another task loops on yield_now. Returns the longest run of the hog's steps during which the
// other task made no progress: at most the budget (per ready await) when the budget works, all
// of the steps when it does not.
namespace detail_scenarios {
struct starvation {
    std::atomic<long> other_progress{0};
    std::atomic<bool> hog_done{false};
    long longest_run = 0;
};
inline task<void> other_task(starvation& s) {
    while (!s.hog_done.load()) {
        s.other_progress.fetch_add(1);
        co_await yield_now();
    }
}
template <class Step>
task<void> hog_task(starvation& s, int steps, Step step) {
    long last = s.other_progress.load(), run = 0;
    for (int i = 0; i < steps; ++i) {
        co_await step();
        const long now = s.other_progress.load();
        if (now == last) {
            s.longest_run = std::max(s.longest_run, ++run);
        } else {
            last = now;
            run = 0;
        }
    }
    s.hog_done = true;
}
}  // namespace detail_scenarios

inline long longest_starvation(unsigned budget, int kind, int steps = 5000) {
    using namespace detail_scenarios;
    config c = conformance::fresh(1);
    c.coop_budget_per_poll = budget;
    runtime rt(c);
    starvation s;
    mutex m;
    auto [tx, rx] = channel<int>(1);
    auto o = rt.spawn(other_task(s));
    if (kind == 0) {
        rt.block_on(hog_task(s, steps, [&]() -> task<void> { auto g = co_await m.lock(); }));
    } else {
        rt.block_on(hog_task(s, steps, [&]() -> task<void> {
            (void)co_await tx.send(1);
            (void)co_await rx.recv();
        }));
    }
    o.join();
    return s.longest_run;
}

// X2's churn: `tasks` acquirers of random sizes in [1, max] on every worker, each holding its
// permits across a yield, a random third of them aborted (while waiting, holding, or just
// granted). `in_use` counts permits held (decremented before a permit goes back, also on
// abort); `peak` keeps the most held at once. Returns once every acquirer finished.
inline void semaphore_churn_round(runtime& rt, semaphore& s, std::size_t max, detail::fast_rng& rng,
                                  std::atomic<long>& in_use, std::atomic<long>& peak,
                                  int tasks = 24) {
    std::vector<join_handle<void>> hs;
    for (int t = 0; t < tasks; ++t) {
        hs.push_back(rt.spawn([](semaphore& s, std::size_t n, std::atomic<long>& use,
                                 std::atomic<long>& peak) -> task<void> {
            auto permit = co_await s.acquire(n);
            struct held {
                std::atomic<long>& use;
                long n;
                ~held() { use.fetch_sub(n); }
            } h{use, static_cast<long>(n)};
            const long now = use.fetch_add(static_cast<long>(n)) + static_cast<long>(n);
            long pk = peak.load();
            while (now > pk && !peak.compare_exchange_weak(pk, now)) {
            }
            co_await yield_now();
        }(s, 1 + rng.bounded(static_cast<std::uint32_t>(max)), in_use, peak)));
    }
    for (auto& h : hs) {
        if (rng.bounded(3) == 0) h.abort();
    }
    for (auto& h : hs) {
        try {
            h.join();
        } catch (const task_cancelled&) {
        }
    }
}

// A task that spins (or, with `yield`, yields in a loop) until `flag` is set, giving up after
// `cap` and saying so in `gave_up`: the busy task of the liveness scenarios below, whose cap is
// a hang guard, never a verdict on speed.
inline task<void> spin_until(std::atomic<bool>& flag, std::atomic<bool>& gave_up,
                             std::chrono::seconds cap, bool yield = false) {
    const auto limit = std::chrono::steady_clock::now() + cap;
    while (!flag.load()) {
        if (std::chrono::steady_clock::now() > limit) {
            gave_up = true;
            break;
        }
        if (yield) co_await yield_now();
    }
}

// T8: yields in a loop until `woke`, like spin_until with `yield`, and counts in `late_polls`
// the polls it made while the sleep was due (from `due`, a steady_clock count; 0: not armed)
// and not yet ended. A count, not a time: a preempted worker makes no polls.
inline task<void> yield_counting(std::atomic<bool>& woke, std::atomic<bool>& gave_up,
                                 const std::atomic<std::int64_t>& due,
                                 std::atomic<std::uint64_t>& late_polls, std::chrono::seconds cap) {
    const auto limit = std::chrono::steady_clock::now() + cap;
    while (!woke.load()) {
        const auto now = std::chrono::steady_clock::now();
        if (now > limit) {
            gave_up = true;
            break;
        }
        const std::int64_t d = due.load();
        if (d != 0 && now.time_since_epoch().count() > d) late_polls.fetch_add(1);
        co_await yield_now();
    }
}

// T7/T8: a 5 ms sleep while the worker that armed it stays busy. `stuck` true (T7, W >= 2):
// the sleeper spawns a task that lands in its own worker's LIFO slot and spins once the sleeper
// suspends; every other worker parked before the timer was armed. `stuck` false (T8, any W):
// `yielders` tasks yield in a loop instead, so the sleeper's worker always has local work (with
// two or more, one of them always sits in the ring). The busy tasks stop once the sleep has
// ended, or give up after `cap`: a hang guard, far above any honest lateness, so giving up
// means the timer was never fired while the worker was busy. The yielders also count their
// polls made once the sleep was due (5 ms plus the wheel's 1 ms resolution and 1 ms to spare)
// and before it ended: a tick's maintenance fires the timer, so a working runtime lets through
// at most the rest of one tick's budget and the queue ahead of the sleeper.
// `c` carries the worker count, the park timeout and faults.
struct busy_sleep_result {
    std::chrono::microseconds overshoot;  // past the 5 ms
    bool busy_gave_up;                    // the sleep did not end within `cap`
    std::uint64_t late_polls = 0;         // yielders' polls while the sleep was overdue
};
inline busy_sleep_result sleep_while_busy(config c, bool stuck, std::chrono::seconds cap,
                                          unsigned yielders = 1) {
    using namespace std::chrono;
    runtime rt(c);
    settle(rt);  // every worker parked, with plans made before the timer exists
    std::atomic<bool> woke{false}, gave_up{false};
    std::atomic<std::int64_t> due{0};
    std::atomic<std::uint64_t> late_polls{0};
    const microseconds late =
        rt.block_on([](runtime& rt, std::atomic<bool>& woke, std::atomic<bool>& gave_up,
                       std::atomic<std::int64_t>& due, std::atomic<std::uint64_t>& late_polls,
                       bool stuck, seconds cap, unsigned yielders) -> task<microseconds> {
            // The worker that started this task may have woken another (I4); wait until every
            // other worker is parked again, so their plans predate the timer.
            const auto settle_limit = steady_clock::now() + cap;
            while (rt.metrics().num_parked + 1 < rt.num_workers() &&
                   steady_clock::now() < settle_limit) {
            }
            std::vector<join_handle<void>> hs;
            if (stuck) {
                hs.push_back(spawn(spin_until(woke, gave_up, cap)));  // this worker's LIFO slot
            } else {
                for (unsigned i = 0; i < yielders; ++i) {
                    hs.push_back(spawn(yield_counting(woke, gave_up, due, late_polls, cap)));
                }
            }
            const auto t0 = steady_clock::now();
            due = duration_cast<steady_clock::duration>((t0 + 7ms).time_since_epoch()).count();
            co_await sleep(5ms);
            const auto d = duration_cast<microseconds>(steady_clock::now() - t0) - 5ms;
            woke = true;
            for (auto& h : hs) co_await h;
            co_return d;
        }(rt, woke, gave_up, due, late_polls, stuck, cap, yielders));
    return {late, gave_up.load(), late_polls.load()};
}

// G2 (issue 15, defect 2): tasks A and B wait in the global queue while every worker is busy
// (3 workers: a root task and two of the three gates it spawned, stolen by the others, spin
// until released), so the first worker to come free fetches both in one batch. A spins until B
// has started, giving up after `cap` (a hang guard); B can start only if the fetched batch is
// visible to the other, idle, workers. Returns the rounds (of `rounds`) in which A gave up.
// `c` must have 3 workers (conformance::fresh(3) places them as the pass does).
inline int fetched_batch_stranded(const config& c, int rounds, std::chrono::seconds cap) {
    using namespace std::chrono;
    runtime rt(c);
    int stranded = 0;
    for (int r = 0; r < rounds; ++r) {
        settle(rt);
        std::atomic<int> gates_up{0};
        std::atomic<bool> release{false}, b_started{false}, gave_up{false};
        auto gate = [](std::atomic<int>& up, std::atomic<bool>& release,
                       seconds cap) -> task<void> {
            up.fetch_add(1);
            const auto limit = steady_clock::now() + cap;
            while (!release.load() && steady_clock::now() < limit) {
            }
            co_return;
        };
        auto root = rt.spawn([](auto gate, std::atomic<int>& up, std::atomic<bool>& release,
                                seconds cap) -> task<void> {
            // The last spawn stays in this worker's LIFO slot; the other two are stolen.
            auto g1 = spawn(gate(up, release, cap));
            auto g2 = spawn(gate(up, release, cap));
            auto g3 = spawn(gate(up, release, cap));
            co_await gate(up, release, cap);
            co_await g1;
            co_await g2;
            co_await g3;
        }(gate, gates_up, release, cap));
        const auto limit = steady_clock::now() + cap;
        while (gates_up.load() < 3 && steady_clock::now() < limit) std::this_thread::yield();
        auto a = rt.spawn(spin_until(b_started, gave_up, cap));
        auto b = rt.spawn([](std::atomic<bool>& b) -> task<void> {
            b = true;
            co_return;
        }(b_started));
        release = true;
        root.join();
        a.join();
        b.join();
        if (gave_up) ++stranded;
    }
    return stranded;
}

// G6: every worker saturated by `per_worker` self-waking loops whose polls each spin `poll` of
// wall-clock time (so preemption only lengthens them, and the interval (G5) settles near
// 1 ms / poll); tasks injected from this thread in pairs, the second while the first is still
// queued. Each injected task is held to 5/4 of its runner's interval plus 2 polls of that
// runner between its push and its start: one interval until a periodic check fetches it (G4),
// fewer than a quarter interval of the ring's tasks ahead of it when it came as the rest of that
// check's batch (G6), the first task of its pair, its own poll.
// The polls are counted from metrics read after both pushes returned (a lower bound); a pair
// that found a worker parked is skipped (not saturated: no verdict), and so is one whose pushes
// were not bracketed: its runner polled more than twice between the metrics read before the
// pushes and the one after them (this thread was preempted there, so the base is too late and
// the count too low to say anything; on a loaded machine that hid every wait of the control, and
// on a quiet one it never happens). Pairs are tried until `pairs` were measured (at most 50
// times as many).
struct injected_wait_result {
    int samples = 0;                 // injected tasks measured
    int unbracketed = 0;             // pairs skipped: their pushes were not bracketed
    int over = 0;                    // of those, how many waited past their bound
    std::uint64_t worst_excess = 0;  // polls beyond the bound, the largest
    std::string first_over;          // the first one over, in words
    std::vector<double> latency_us;  // push to start, wall clock (reported, never a verdict)
};

inline injected_wait_result injected_waits(const config& c, unsigned per_worker, int pairs,
                                           std::chrono::microseconds poll) {
    using namespace std::chrono;
    struct start_record {
        std::atomic<unsigned> on{~0u};
        std::atomic<std::uint64_t> polls{0};
        double us = 0;
    };
    auto injected = [](const runtime& rt, steady_clock::time_point t0,
                       start_record& r) -> task<void> {
        r.us = duration<double, std::micro>(steady_clock::now() - t0).count();
        const unsigned me = detail::current_worker()->index();
        r.polls = rt.metrics().workers[me].polls;
        r.on = me;
        co_return;
    };
    injected_wait_result out;
    runtime rt(c);
    std::atomic<bool> stop{false};
    std::vector<join_handle<void>> busy;
    for (unsigned i = 0; i < per_worker * c.workers; ++i) {
        busy.push_back(rt.spawn([](std::atomic<bool>& stop, microseconds poll) -> task<void> {
            while (!stop.load(std::memory_order_relaxed)) {
                const auto until = steady_clock::now() + poll;
                while (steady_clock::now() < until) {
                }
                co_await yield_now();
            }
        }(stop, poll)));
    }
    // Saturated, and the intervals settled from their start (20, for 50 us polls) to about
    // 1 ms / poll: the EWMA takes some 20 ticks of 128 polls (bounded: 10 s).
    const std::uint64_t settled = static_cast<std::uint64_t>(milliseconds(1) / poll) + 2;
    for (int i = 0; i < 100'000; ++i) {
        const runtime_metrics m = rt.metrics();
        if (m.num_parked == 0 &&
            std::all_of(m.workers.begin(), m.workers.end(),
                        [&](const worker_metrics& w) { return w.global_interval <= settled; })) {
            break;
        }
        std::this_thread::sleep_for(100us);
    }
    for (int k = 0, measured = 0; measured < pairs && k < 50 * pairs; ++k) {
        std::this_thread::sleep_for(poll * 2);
        const runtime_metrics before = rt.metrics();
        if (before.num_parked > 0) continue;
        start_record a, b;
        const auto t0 = steady_clock::now();
        auto ha = rt.spawn(injected(rt, t0, a));
        auto hb = rt.spawn(injected(rt, t0, b));
        const runtime_metrics pushed = rt.metrics();
        ha.join();
        hb.join();
        const runtime_metrics after = rt.metrics();
        const auto bracketed = [&](const start_record& r) {
            const unsigned on = r.on.load();
            return pushed.workers[on].polls - before.workers[on].polls <= 2;
        };
        if (!bracketed(a) || !bracketed(b)) {
            ++out.unbracketed;
            continue;
        }
        ++measured;
        for (const start_record* r : {&a, &b}) {
            const unsigned on = r->on.load();
            const std::uint64_t base = pushed.workers[on].polls, start = r->polls.load();
            const std::uint64_t waited = start > base ? start - base : 0;
            const std::uint64_t interval =
                std::max({before.workers[on].global_interval, after.workers[on].global_interval});
            const std::uint64_t bound = interval + interval / 4 + 2;
            ++out.samples;
            out.latency_us.push_back(r->us);
            if (waited > bound) {
                if (out.over++ == 0) {
                    out.first_over = std::string("the ") + (r == &a ? "first" : "second") +
                                     " task of a pair waited " + std::to_string(waited) +
                                     " polls of worker " + std::to_string(on) + " (bound " +
                                     std::to_string(bound) + ", interval " +
                                     std::to_string(interval) + ")";
                }
                out.worst_excess = std::max(out.worst_excess, waited - bound);
            }
        }
    }
    stop = true;
    for (auto& h : busy) h.join();
    return out;
}

}  // namespace blitz::workloads
