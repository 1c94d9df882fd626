// SPDX-License-Identifier: MIT
// The first checkers (Q4, Q5, L2, L3, G2, G4, B1, I4, K3, T3, T4), each with its negative control.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "checker_util.hpp"
#include "registry.hpp"
#include "base/rng.hpp"
#include "blitz_testing/scenarios.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/test_event.hpp"
#include "blitz_testing/wheel_model.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;

// Q5: a steal takes ceil(available / 2), never more than 128 (nor the thief's free room).
// Workload: a task fills its own ring with children and holds its worker, so only thieves can
// run them. Control: steal everything.
outcome check_q5(const run_params& p, bool faulty) {
    outcome o;
    if (p.workers < 2) {
        o.applicable = false;
        return o;
    }
    config c = probed(p.workers);
    c.debug.steal_all = faulty;
    runtime rt(c);
    const int rounds = p.quick ? 3 : 20;
    for (int r = 0; r < rounds; ++r) {
        const int children = 40 + static_cast<int>(detail::mix_seed(p.seed + r) % 180);
        rt.block_on([](int n) -> task<void> {
            std::atomic<int> done{0};
            std::vector<join_handle<void>> hs;
            for (int i = 0; i < n; ++i) {
                hs.push_back(spawn([](std::atomic<int>& d) -> task<void> {
                    d.fetch_add(1);
                    co_return;
                }(done)));
            }
            // The last child waits in this worker's LIFO slot, which thieves cannot take.
            const auto cap = std::chrono::steady_clock::now() + 30s;
            while (done.load() < n - 1 && std::chrono::steady_clock::now() < cap) {
            }
            for (auto& h : hs) co_await h;
        }(children));
        ++o.runs;
    }
    visit_events(rt, o, [&](const probe_event& e) {
        if (e.kind != probe_kind::steal) return;
        ++o.events;
        const std::uint64_t half = std::min<std::uint64_t>(e.b - e.b / 2, 128);
        if (e.c > half) {
            ++o.violations;
            note_first(o, "took " + std::to_string(e.c) + " of " + std::to_string(e.b));
        }
    });
    return o;
}

// L2: at most lifo_polls_per_tick (3) polls from the LIFO slot per tick. Read from the poll
// events between tick boundaries. Control: the cap raised to 128 while the check keeps 3.
outcome check_l2(const run_params& p, bool faulty) {
    outcome o;
    config c = probed(p.workers);
    const unsigned documented_cap = c.lifo_polls_per_tick;
    if (faulty) c.lifo_polls_per_tick = 128;
    runtime rt(c);
    const int rounds = p.quick ? 2 : 10;
    for (int r = 0; r < rounds; ++r) {
        rt.block_on(workloads::chain(p.quick ? 2'000 : 20'000));
        rt.block_on(workloads::tree(4, 4));
        ++o.runs;
    }
    unsigned lifo_in_tick = 0;  // every worker's stream starts with a tick_begin
    visit_events(rt, o, [&](const probe_event& e) {
        if (e.kind == probe_kind::tick_begin) lifo_in_tick = 0;
        if (e.kind != probe_kind::poll) return;
        ++o.events;
        if (static_cast<poll_source>(e.a) == poll_source::lifo &&
            ++lifo_in_tick == documented_cap + 1) {
            ++o.violations;
            note_first(o, "more than " + std::to_string(documented_cap) +
                              " LIFO polls in one tick on worker " + std::to_string(e.worker));
        }
    });
    return o;
}

// I4: a task queued while the last searcher is on its way to park is found by its final check,
// never left for a timeout (workloads::park_window, 1 worker). Control: skip the final check.
// End to end, the consequence: with the park timeout raised to 10 s, chained, fan-out and
// tree workloads complete with no timeout wake that found work (a stranded task would wait
// 10 s for it, and the harness watchdog catches anything longer).
outcome check_i4(const run_params& p, bool faulty) {
    outcome o;
    const int rounds = p.quick ? 3 : 10;
    for (int r = 0; r < rounds; ++r) {
        // A stranded task is rescued by the 50 ms park timeout, and counted.
        const auto w = workloads::park_window(faulty, 50ms);
        ++o.runs;
        ++o.events;
        if (w.metrics.total(&worker_metrics::timeout_wakes_found_work) > 0) {
            ++o.violations;
            note_first(o, "a task queued in the park window waited for a park timeout");
        }
    }
    if (faulty) return o;
    config c = fresh(p.workers);
    c.park_timeout = 10s;
    runtime rt(c);
    for (int r = 0; r < (p.quick ? 3 : 20); ++r) {
        rt.block_on(workloads::chain(500));
        rt.block_on(workloads::fan_out(1000));
        rt.block_on(workloads::tree(3, 5));
        std::this_thread::sleep_for(1ms);  // let workers park between rounds
        ++o.runs;
    }
    const runtime_metrics m = workloads::settle(rt);
    o.events += m.total(&worker_metrics::parks);
    if (m.total(&worker_metrics::timeout_wakes_found_work) > 0) {
        ++o.violations;
        note_first(o, "with a 10 s park timeout, a task waited for a timeout wake");
    }
    return o;
}

// T4: no timer fires before its deadline; on the virtual clock each fires at the first advance
// that reaches it. Sleepers record the virtual time they woke at. Control: fire a tick early.
outcome check_t4(const run_params& p, bool faulty) {
    outcome o;
    config c = fresh(p.workers);
    c.start_paused = true;
    c.debug.timers_fire_early = faulty;
    runtime rt(c);
    const int n = p.quick ? 300 : 3000;
    const int horizon_ms = p.quick ? 200 : 2000;
    const instant t0 = rt.now();
    detail::fast_rng rng(detail::mix_seed(p.seed));
    std::vector<int> want(n);
    std::vector<std::atomic<std::int64_t>> woke(n);
    std::atomic<int> done{0};
    std::vector<join_handle<void>> hs;
    for (int i = 0; i < n; ++i) {
        want[i] = 1 + static_cast<int>(rng.bounded(horizon_ms));
        hs.push_back(rt.spawn([](instant t0, int ms, std::atomic<std::int64_t>& out,
                                 std::atomic<int>& d) -> task<void> {
            co_await sleep_until(t0 + std::chrono::milliseconds(ms));
            out = std::chrono::duration_cast<std::chrono::microseconds>(now() - t0).count();
            d.fetch_add(1);
        }(t0, want[i], woke[i], done)));
    }
    for (int i = 0; i < 100'000 && rt.metrics().timers_pending < std::uint64_t(n); ++i) {
        std::this_thread::sleep_for(50us);
    }
    for (int t = 1; t <= horizon_ms + 1; ++t) {
        rt.advance(1ms);
        const int due = static_cast<int>(std::count_if(
            want.begin(), want.end(), [&](int w) { return w <= t || (faulty && w <= t + 1); }));
        for (int i = 0; i < 100'000 && done.load() < due; ++i) std::this_thread::sleep_for(20us);
    }
    for (auto& h : hs) h.join();
    ++o.runs;
    for (int i = 0; i < n; ++i) {
        ++o.events;
        if (woke[i].load() < std::int64_t(want[i]) * 1000) {
            ++o.violations;
            note_first(o, "a " + std::to_string(want[i]) + " ms sleeper woke at " +
                              std::to_string(woke[i].load()) + " us");
        }
    }
    return o;
}


// G2: a global fetch takes n <= min(len, clamp(len / W, 4, 64)) tasks (fewer only for lack of
// room). Workload: bursts injected from a plain thread. Control: batch bounds raised to 256.
outcome check_g2(const run_params& p, bool faulty) {
    outcome o;
    config c = probed(p.workers);
    const config documented;
    if (faulty) c.global_batch_min = c.global_batch_max = 256;
    runtime rt(c);
    const int rounds = p.quick ? 3 : 12;
    for (int r = 0; r < rounds; ++r) {
        std::vector<join_handle<unsigned long>> hs;
        for (int i = 0; i < 3000; ++i) hs.push_back(rt.spawn(workloads::leaf(i)));
        for (auto& h : hs) h.join();
        ++o.runs;
    }
    visit_events(rt, o, [&](const probe_event& e) {
        if (e.kind != probe_kind::global_fetch) return;
        ++o.events;
        const std::uint64_t share = std::clamp<std::uint64_t>(
            e.c / p.workers, documented.global_batch_min, documented.global_batch_max);
        if (e.b > std::min(e.c, share)) {
            ++o.violations;
            note_first(o, "fetched " + std::to_string(e.b) + " of " + std::to_string(e.c));
        }
    });
    return o;
}

// B1: a tick runs at most 128 polls. Workload: a yield storm (self-waking tasks, so ticks fill
// up). Control: the budget raised to 1000 while the check keeps 128.
outcome check_b1(const run_params& p, bool faulty) {
    outcome o;
    config c = probed(p.workers);
    const unsigned documented_budget = c.budget_per_tick;
    if (faulty) c.budget_per_tick = 1000;
    runtime rt(c);
    const int rounds = p.quick ? 1 : 5;
    for (int r = 0; r < rounds; ++r) {
        rt.block_on(workloads::yield_storm(4 * p.workers, 500));
        ++o.runs;
    }
    visit_events(rt, o, [&](const probe_event& e) {
        if (e.kind != probe_kind::tick_end) return;
        ++o.events;
        if (e.a > documented_budget) {
            ++o.violations;
            note_first(o, "a tick ran " + std::to_string(e.a) + " polls");
        }
    });
    return o;
}

// K3: every task is destroyed exactly once, including at shutdown with tasks queued, waiting
// and idle: the live task allocations return to their baseline and every task's locals are
// destroyed once. Control: shutdown forgets the global queue.
outcome check_k3(const run_params& p, bool faulty) {
    outcome o;
    struct counted {
        std::atomic<int>* live;
        explicit counted(std::atomic<int>* l) : live(l) { live->fetch_add(1); }
        ~counted() { live->fetch_sub(1); }
    };
    const auto alive = [] {
        config one = fresh(1);
        return runtime(one).metrics().tasks_alive;
    };
    const int rounds = p.quick ? 3 : 10;
    for (int r = 0; r < rounds; ++r) {
        const std::uint64_t before = alive();
        std::atomic<int> live{0};
        detail::testing::test_event never;
        {
            config c = fresh(p.workers);
            c.debug.shutdown_skips_global_queue = faulty;
            runtime rt(c);
            for (int i = 0; i < 200; ++i) {  // waiting on an event that never fires
                rt.spawn([](std::atomic<int>* l, detail::testing::test_event& ev) -> task<void> {
                    counted g(l);
                    co_await ev.wait();
                }(&live, never)).detach();
            }
            for (int i = 0; i < 500; ++i) {  // yielding forever: always queued somewhere
                rt.spawn([](std::atomic<int>* l) -> task<void> {
                    counted g(l);
                    for (;;) co_await yield_now();
                }(&live)).detach();
            }
            for (int i = 0; i < 300; ++i) {  // never polled: still in the global queue
                rt.spawn([](std::atomic<int>* l) -> task<void> {
                    counted g(l);
                    co_return;
                }(&live)).detach();
            }
            // Woken during shutdown itself: a waiting task holds the sender of a oneshot whose
            // receiver another waiting task awaits. Cancelling the holder (single-threaded,
            // after the workers stopped) wakes the receiver, whose queue entry lands in the
            // global queue; spawned in both orders so that in one of them the receiver is
            // still waiting when its sender goes. This part does not depend on how quickly the
            // workers drained the queue before shutdown.
            for (int i = 0; i < 100; ++i) {
                auto [tx, rx] = oneshot<int>();
                auto receiver = [](std::atomic<int>* l, oneshot_receiver<int> rx) -> task<void> {
                    counted g(l);
                    (void)co_await rx;
                };
                auto holder = [](std::atomic<int>* l, oneshot_sender<int> tx,
                                 detail::testing::test_event& ev) -> task<void> {
                    counted g(l);
                    co_await ev.wait();
                };
                if (i % 2) {
                    rt.spawn(receiver(&live, std::move(rx))).detach();
                    rt.spawn(holder(&live, std::move(tx), never)).detach();
                } else {
                    rt.spawn(holder(&live, std::move(tx), never)).detach();
                    rt.spawn(receiver(&live, std::move(rx))).detach();
                }
            }
        }
        ++o.runs;
        o.events += 1200;
        const std::uint64_t after = alive();
        if (after != before || live.load() != 0) {
            ++o.violations;
            note_first(o, std::to_string(after - before) + " task allocations outlived shutdown");
        }
    }
    return o;
}

// Q4: a full ring with no steal in progress moves half of itself (128) plus the new task to the
// global queue; with a steal in progress only the new task goes. Workload: one task spawns
// thousands of children without yielding. Control: move the whole ring.
outcome check_q4(const run_params& p, bool faulty) {
    outcome o;
    config c = probed(p.workers);
    c.debug.overflow_all = faulty;
    runtime rt(c);
    const int rounds = p.quick ? 2 : 10;
    for (int r = 0; r < rounds; ++r) {
        rt.block_on(workloads::fan_out(3'000));
        ++o.runs;
    }
    visit_events(rt, o, [&](const probe_event& e) {
        if (e.kind != probe_kind::overflow) return;
        ++o.events;
        if (e.b != 129 && e.b != 1) {
            ++o.violations;
            note_first(o, "an overflow moved " + std::to_string(e.b) + " tasks");
        }
    });
    return o;
}

// T1-T3: the wheel (level choice, next expiry, cascading) matches an ordered-multimap model:
// random inserts across every level and the overflow list (weighted to level boundaries),
// cancels and advances; every timer fires in the same advance as in the model, none early.
// Control: higher-level slots fire without cascading.
outcome check_t3(const run_params& p, bool faulty) {
    outcome o;
    const int seeds = p.quick ? 60 : 600;
    for (int k = 0; k < seeds; ++k) {
        const std::uint64_t seed = p.seed * 1'000'003 + k;
        detail::fast_rng r(detail::mix_seed(seed));
        detail::wheel_model m(std::uint64_t{r.next()} << 6, detail::timer_wheel::faults{.no_cascade = faulty});
        bool bad = false;
        for (int op = 0; op < 800 && !bad; ++op) {
            const std::uint64_t now = m.now();
            const unsigned kind = r.bounded(8);
            if (kind < 4) {
                const unsigned level = r.bounded(6);
                const std::uint64_t span = std::uint64_t{1} << (6 * level + 6);
                std::uint64_t off = std::uint64_t{r.next()} % span;
                if (r.bounded(4) == 0) off = (std::uint64_t{1} << (6 * level)) - r.bounded(2);
                m.insert(now + off);
            } else if (kind < 5 && m.pending() > 0) {
                m.cancel_nth(r.bounded(static_cast<std::uint32_t>(m.pending())));
            } else {
                const std::uint64_t to =
                    now + std::uint64_t{r.next()} % (std::uint64_t{1} << (6 * r.bounded(5) + 4));
                const detail::wheel_model::step st = m.advance(to);
                ++o.events;
                if (st.early || !st.same_fired || !st.next_ok) {
                    bad = true;
                    note_first(o, "seed " + std::to_string(seed) +
                                      (st.early ? ": a timer fired early" : ": differs from the model"));
                }
            }
        }
        ++o.runs;
        o.violations += bad;
    }
    return o;
}

// G4: a worker with local work checks the global queue at least once every `interval` polls
// (at most 255). Workload: one self-waking task per worker saturates them for a bounded number of
// yields while tasks are injected from this thread; verdict from each worker's own counters.
// Control: skip the periodic check.
outcome check_g4(const run_params& p, bool faulty) {
    outcome o;
    config c = fresh(p.workers);
    c.debug.skip_periodic_global_check = faulty;
    const unsigned bound = c.global_interval_max;
    runtime rt(c);
    const int rounds = p.quick ? 1 : 4;
    for (int r = 0; r < rounds; ++r) {
        std::vector<join_handle<void>> busy;
        for (unsigned i = 0; i < p.workers; ++i) {
            busy.push_back(rt.spawn([]() -> task<void> {
                for (int k = 0; k < 20'000; ++k) co_await yield_now();
            }()));
        }
        std::vector<join_handle<unsigned long>> injected;
        for (int i = 0; i < 200; ++i) injected.push_back(rt.spawn(workloads::leaf(i)));
        for (auto& h : injected) h.join();
        for (auto& h : busy) h.join();
        ++o.runs;
    }
    const runtime_metrics m = workloads::settle(rt);
    for (const worker_metrics& w : m.workers) {
        if (w.polls < 4 * bound) continue;  // this worker was never saturated
        ++o.events;
        if (w.global_periodic + 1 < w.polls / bound) {
            ++o.violations;
            note_first(o, std::to_string(w.global_periodic) + " periodic checks in " +
                              std::to_string(w.polls) + " polls");
        }
    }
    return o;
}

// L3: two tasks waking each other through the LIFO slot cannot starve a third waiting in the
// ring: it runs within 3 LIFO polls (workloads::polls_before_queued_task, 1 worker). Control: the
// LIFO cap raised to 128.
outcome check_l3(const run_params& p, bool faulty) {
    outcome o;
    const int rounds = p.quick ? 3 : 10;
    for (int r = 0; r < rounds; ++r) {
        const std::size_t n = workloads::polls_before_queued_task(faulty ? 128 : 3);
        ++o.runs;
        ++o.events;
        if (n > 3) {
            ++o.violations;
            note_first(o, "the queued task waited " + std::to_string(n) + " LIFO polls");
        }
    }
    return o;
}

}  // namespace

std::vector<checker> core_checkers() {
    return {
        {"Q5", "a steal takes ceil(n/2) tasks, at most 128", "steal everything", check_q5},
        {"L2", "at most 3 LIFO-slot polls per tick", "LIFO cap raised to 128", check_l2},
        {"I4", "the last searcher's final check finds a task queued while it parks",
         "skip the final check", check_i4},
        {"T4", "no timer fires before its deadline (virtual clock)", "fire one tick early",
         check_t4},
        {"G2", "a global fetch takes at most min(len, clamp(len/W, 4, 64))",
         "batch bounds raised to 256", check_g2},
        {"B1", "a tick runs at most 128 polls", "budget raised to 1000", check_b1},
        {"K3", "every task is destroyed exactly once, also at shutdown",
         "shutdown forgets the global queue", check_k3},
        {"Q4", "a full ring moves 128 + 1 tasks (or 1 during a steal) to the global queue",
         "move the whole ring", check_q4},
        {"T3", "the wheel fires like an ordered-map model: cascades, never early",
         "fire higher levels without cascading", check_t3},
        {"G4", "a saturated worker checks the global queue every <= 255 polls",
         "skip the periodic check", check_g4},
        {"L3", "a task in the ring runs within 3 polls of a LIFO ping-pong",
         "LIFO cap raised to 128", check_l3},
    };
}

}  // namespace blitz::conformance
