// SPDX-License-Identifier: MIT
// K: the task state word and lifecycle (K3 lives in checkers.cpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/scenarios.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/test_event.hpp"
#include "blitz_testing/wheel_model.hpp"
#include "blitz_testing/workloads.hpp"
#include "checker_util.hpp"
#include "registry.hpp"
#include "task/task_access.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;
namespace st = detail::state;

// The documented layout (INVARIANTS.md K1), written down independently of task_state.hpp.
struct layout {
    unsigned ref_shift, shield_shift, flags_shift, lifecycle_shift;
};
constexpr layout documented{40, 32, 24, 16};

// K1: the state word holds ref count (24 bits), shield depth (8), flags (8: notified, cancelled,
// join interest, detached) and lifecycle (8: idle, scheduled, running, complete). The code's
// constants must match the documented positions, and a live word read inside a running task
// (two shields, three extra waker clones) must decode to what the task knows about itself.
// Control: K1 is a compile-time property, so no runtime knob can move a field; the control hands
// the checker a layout with the flags and lifecycle bytes swapped, as a build that moved them
// would have.
outcome check_k1(const run_params& p, bool faulty) {
    outcome o;
    layout code{st::ref_shift, st::shield_shift, st::flags_shift, st::lifecycle_shift};
    if (faulty) std::swap(code.flags_shift, code.lifecycle_shift);
    ++o.events;
    if (code.ref_shift != documented.ref_shift || code.shield_shift != documented.shield_shift ||
        code.flags_shift != documented.flags_shift ||
        code.lifecycle_shift != documented.lifecycle_shift) {
        forbid(o, "the state word's fields are not where K1 puts them");
    }
    ++o.events;
    if (st::notified != std::uint64_t{1} << (code.flags_shift + 0) ||
        st::cancelled != std::uint64_t{1} << (code.flags_shift + 1) ||
        st::join_interest != std::uint64_t{1} << (code.flags_shift + 2) ||
        st::detached != std::uint64_t{1} << (code.flags_shift + 3) ||
        st::lifecycle_bits(st::lifecycle::complete) != std::uint64_t{3} << code.lifecycle_shift) {
        forbid(o, "flag or lifecycle encodings differ from K1");
    }
    config c = fresh(p.workers);
    runtime rt(c);
    struct seen {
        std::uint64_t before = 0, after = 0;
    };
    const int rounds = p.quick ? 20 : 200;
    for (int r = 0; r < rounds; ++r) {
        const seen s = rt.block_on([]() -> task<seen> {
            auto h = spawn([]() -> task<seen> {
                seen out;
                cancel_shield a, b;
                detail::task_header* self = detail::current_task();
                out.before = self->load_state();
                waker w1 = self->make_waker();
                waker w2 = w1, w3 = w1;
                out.after = self->load_state();
                co_return out;
            }());
            co_return co_await h;
        }());
        ++o.runs;
        auto field = [](std::uint64_t w, unsigned shift) { return (w >> shift) & 0xFF; };
        const std::uint64_t refs_before = s.before >> documented.ref_shift;
        const std::uint64_t refs_after = s.after >> documented.ref_shift;
        o.events += 4;
        if (field(s.after, documented.lifecycle_shift) != 2)
            forbid(o, "a running task's lifecycle byte is not 2");
        if (field(s.after, documented.shield_shift) != 2)
            forbid(o, "two shields do not read as depth 2");
        if (refs_after != refs_before + 3) forbid(o, "three waker clones did not add 3 references");
        // K1's four flags: only join interest is set (bits 4-7 are implementation extras, e.g.
        // the registered-join-waker bit).
        if ((field(s.after, documented.flags_shift) & 0x0F) != 0x04) {
            forbid(o, "flags byte " + std::to_string(field(s.after, documented.flags_shift)));
        }
    }
    return o;
}

// K2: drives one task header's state machine the way the scheduler does: two threads wake it
// (wake_by_ref) at random moments while a runner takes queue entries, polls (reading a wake
// epoch) and handles the after-poll transition. Never two queue entries for the task; after
// the wakers stop, the last poll saw the last wake (none lost). Control: a wake of a RUNNING task
// asks for a second queue entry.
outcome check_k2(const run_params& p, bool faulty) {
    outcome o;
    const int rounds = p.quick ? 4 : 20;
    const int wakes = p.quick ? 20'000 : 100'000;
    // First, deterministically: a task that wakes itself during each of its polls (as a waker
    // fired inside the poll does) must be rescheduled through NOTIFIED, with one entry at a time.
    {
        detail::task_header h;
        detail::task_access::state(h).store(st::ref_one * 1000 |
                                            st::lifecycle_bits(st::lifecycle::scheduled));
        int entries = 1;
        for (int k = 0; k < 1000 && entries > 0; ++k) {
            --entries;
            if (st::lifecycle_of(h.load_state()) != st::lifecycle::scheduled) {
                forbid(o, "a queue entry for a task that was not scheduled (self-wake)");
                break;
            }
            h.transition_to_running();
            if (h.transition_to_scheduled(false, faulty)) ++entries;  // wake while RUNNING
            if (k < 999 &&
                h.transition_after_poll() == detail::task_header::after_poll::rescheduled) {
                ++entries;
            }
            ++o.events;
            if (entries > 1) forbid(o, "two queue entries after a wake of a running task");
            if (k < 999 && entries == 0) forbid(o, "a wake of a running task was lost");
        }
        ++o.runs;
    }
    for (int r = 0; r < rounds; ++r) {
        detail::task_header h;
        detail::task_access::state(h).store(st::ref_one * 1000 |
                                            st::lifecycle_bits(st::lifecycle::idle));
        std::atomic<int> entries{0}, max_entries{0};
        std::atomic<std::uint64_t> epoch{0};
        std::atomic<int> wakers_done{0};
        std::atomic<bool> started{false};
        auto enqueue = [&] {
            const int now = entries.fetch_add(1) + 1;
            int m = max_entries.load();
            while (now > m && !max_entries.compare_exchange_weak(m, now)) {
            }
        };
        std::vector<std::thread> ws;
        for (int i = 0; i < 2; ++i) {
            ws.emplace_back([&, i] {
                detail::fast_rng rng(detail::mix_seed(p.seed * 977 + r * 2 + i));
                while (!started.load()) std::this_thread::yield();
                for (int k = 0; k < wakes; ++k) {
                    epoch.fetch_add(1);
                    if (h.transition_to_scheduled(false, faulty)) enqueue();
                    for (unsigned s = rng.bounded(64); s > 0; --s)
                        std::atomic_signal_fence(std::memory_order_seq_cst);
                }
                wakers_done.fetch_add(1);
            });
        }
        std::uint64_t last_seen = 0, polls = 0, stale = 0;
        started = true;
        for (;;) {
            if (entries.load() == 0) {
                if (wakers_done.load() == 2 && entries.load() == 0) break;
                continue;
            }
            entries.fetch_sub(1);
            if (st::lifecycle_of(h.load_state()) != st::lifecycle::scheduled) {
                ++stale;  // a second entry for a task already run: never poll it
                continue;
            }
            h.transition_to_running();
            last_seen = epoch.load();
            ++polls;
            if (h.transition_after_poll() == detail::task_header::after_poll::rescheduled)
                enqueue();
        }
        for (auto& t : ws) t.join();
        ++o.runs;
        o.events += polls;
        if (stale)
            forbid(o, std::to_string(stale) + " queue entries for a task that was not scheduled");
        if (max_entries.load() > 1) {
            forbid(o, std::to_string(max_entries.load()) + " queue entries for one task at once");
        }
        if (last_seen != epoch.load()) {
            forbid(o, "a wake was lost: the last poll saw epoch " + std::to_string(last_seen) +
                          " of " + std::to_string(epoch.load()));
        }
    }
    return o;
}

// K4: abort completes the handle as cancelled whether the task is idle (waiting on an event),
// scheduled (spawned, not yet polled) or running (yielding); code after the cancellation point
// never runs; a shield defers cancellation until it is dropped. Control: abort ignores shields.
outcome check_k4(const run_params& p, bool faulty) {
    outcome o;
    config c = fresh(p.workers);
    c.debug.abort_ignores_shield = faulty;
    runtime rt(c);
    const int rounds = p.quick ? 10 : 60;
    for (int r = 0; r < rounds; ++r) {
        ++o.runs;
        // Idle.
        {
            detail::testing::test_event never;
            std::atomic<bool> entered{false}, after{false};
            auto h = rt.spawn([](detail::testing::test_event& ev, std::atomic<bool>& entered,
                                 std::atomic<bool>& after) -> task<void> {
                entered = true;
                co_await ev.wait();
                after = true;
            }(never, entered, after));
            while (!entered) std::this_thread::yield();
            std::this_thread::sleep_for(100us);
            h.abort();
            bool cancelled = false;
            try {
                h.join();
            } catch (const task_cancelled&) {
                cancelled = true;
            }
            ++o.events;
            if (!cancelled || after) forbid(o, "an idle task was not cancelled cleanly");
        }
        // Scheduled.
        {
            const bool ok = rt.block_on([]() -> task<bool> {
                std::atomic<bool> ran{false};
                auto h = spawn([](std::atomic<bool>& ran) -> task<void> {
                    ran = true;
                    co_return;
                }(ran));
                h.abort();
                bool cancelled = false;
                try {
                    co_await h;
                } catch (const task_cancelled&) {
                    cancelled = true;
                }
                co_return cancelled && !ran;
            }());
            ++o.events;
            if (!ok) forbid(o, "a scheduled task ran or was not cancelled");
        }
        // Running, and shielded.
        {
            std::atomic<bool> entered{false}, aborted{false}, shield_done{false}, after{false};
            auto h = rt.spawn([](std::atomic<bool>& entered, std::atomic<bool>& aborted,
                                 std::atomic<bool>& shield_done,
                                 std::atomic<bool>& after) -> task<void> {
                {
                    cancel_shield s;
                    entered = true;
                    while (!aborted) co_await yield_now();
                    for (int i = 0; i < 3; ++i) co_await yield_now();
                    shield_done = true;
                }
                for (int i = 0; i < 1000; ++i) co_await yield_now();
                after = true;
            }(entered, aborted, shield_done, after));
            while (!entered) std::this_thread::yield();
            h.abort();
            aborted = true;
            bool cancelled = false;
            try {
                h.join();
            } catch (const task_cancelled&) {
                cancelled = true;
            }
            o.events += 2;
            if (!shield_done) forbid(o, "an abort cut through a cancel_shield");
            if (!cancelled || after) forbid(o, "a running task was not cancelled after its shield");
        }
    }
    return o;
}

// K5: a task awaiting another's join handle is woken when the result is ready, and gets the
// value, the exception (same type and message) or task_cancelled. Pairs run across the workers.
// Control: exceptions are dropped at the task boundary.
outcome check_k5(const run_params& p, bool faulty) {
    outcome o;
    config c = fresh(p.workers);
    c.debug.drop_exceptions = faulty;
    runtime rt(c);
    const int pairs = p.quick ? 200 : 2000;
    struct result {
        int bad = 0;
        std::string first;
    };
    const result res = rt.block_on([](int pairs) -> task<result> {
        std::vector<join_handle<int>> waiters;
        for (int i = 0; i < pairs; ++i) {
            waiters.push_back(spawn([](int i) -> task<int> {
                const int kind = i % 3;
                if (kind == 0) {
                    auto h = spawn([](int i) -> task<int> {
                        for (int y = 0; y < 3; ++y) co_await yield_now();
                        co_return i * 7;
                    }(i));
                    co_return (co_await h) == i * 7 ? 0 : 1;
                }
                if (kind == 1) {
                    auto h = spawn([](int i) -> task<void> {
                        for (int y = 0; y < 3; ++y) co_await yield_now();
                        throw std::runtime_error("k5-" + std::to_string(i));
                    }(i));
                    try {
                        co_await h;
                    } catch (const std::runtime_error& e) {
                        co_return std::string(e.what()) == "k5-" + std::to_string(i) ? 0 : 2;
                    }
                    co_return 2;
                }
                auto h = spawn([]() -> task<void> {
                    for (;;) co_await yield_now();
                }());
                co_await yield_now();
                h.abort();
                try {
                    co_await h;
                } catch (const task_cancelled&) {
                    co_return 0;
                }
                co_return 3;
            }(i)));
        }
        result r;
        for (auto& w : waiters) {
            const int v = co_await w;
            if (v != 0 && r.bad++ == 0) {
                r.first = v == 1   ? "a value did not reach its awaiter"
                          : v == 2 ? "an exception did not reach its awaiter"
                                   : "a cancellation did not reach its awaiter";
            }
        }
        co_return r;
    }(pairs));
    ++o.runs;
    o.events += static_cast<std::uint64_t>(pairs);
    if (res.bad)
        forbid(o, std::to_string(res.bad) + " awaiters got the wrong outcome; " + res.first);
    return o;
}

// K3: every task is destroyed exactly once, including at shutdown with tasks queued, waiting
// and idle: the live task allocations return to their baseline and every task's locals are
// destroyed once. Control, two halves each caught on its own: shutdown forgets the global
// queue; a task that a poll left suspended is never listed (issue 45's lazy listing without
// its list: shutdown cannot find the idle tasks).
struct k3_faults {
    bool skip_global = false;
    bool unlisted = false;
};
void k3_rounds(const run_params& p, k3_faults f, outcome& o) {
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
            c.debug.shutdown_skips_global_queue = f.skip_global;
            c.debug.suspended_tasks_unlisted = f.unlisted;
            std::atomic<int> waiting{0};  // outlives the runtime, which its tasks may touch
            runtime rt(c);
            for (int i = 0; i < 200; ++i) {  // waiting on an event that never fires
                rt.spawn([](std::atomic<int>* l, detail::testing::test_event& ev,
                            std::atomic<int>& waiting) -> task<void> {
                      counted g(l);
                      waiting.fetch_add(1);
                      co_await ev.wait();
                  }(&live, never, waiting))
                    .detach();
            }
            // Idle at shutdown, not still queued (a worker slow to start would otherwise leave
            // them all in the global queue): bounded, 20 s.
            for (int i = 0; i < 200'000 && waiting.load() < 200; ++i)
                std::this_thread::sleep_for(std::chrono::microseconds(100));
            for (int i = 0; i < 500; ++i) {  // yielding forever: always queued somewhere
                rt.spawn([](std::atomic<int>* l) -> task<void> {
                      counted g(l);
                      for (;;) co_await yield_now();
                  }(&live))
                    .detach();
            }
            for (int i = 0; i < 300; ++i) {  // never polled: still in the global queue
                rt.spawn([](std::atomic<int>* l) -> task<void> {
                      counted g(l);
                      co_return;
                  }(&live))
                    .detach();
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
}

outcome check_k3(const run_params& p, bool faulty) {
    outcome o;
    if (!faulty) {
        k3_rounds(p, {}, o);
        return o;
    }
    outcome global, unlisted;
    k3_rounds(p, {.skip_global = true}, global);
    k3_rounds(p, {.unlisted = true}, unlisted);
    o.runs = global.runs + unlisted.runs;
    o.events = global.events + unlisted.events;
    o.violations = global.violations + unlisted.violations;
    o.detail = global.detail;
    if (global.violations == 0 || unlisted.violations == 0) {
        o.violations = 0;  // each half of the control must be caught on its own
        o.detail = global.violations == 0 ? "a shutdown that forgets the global queue not caught"
                                          : "idle tasks left unlisted not caught";
    }
    return o;
}

}  // namespace

std::vector<checker> task_checkers() {
    return {
        {"K3", "every task is destroyed exactly once, also at shutdown",
         "shutdown forgets the global queue; idle tasks unlisted", check_k3},
        {"K1", "state word: refs 24 | shield 8 | flags 8 | lifecycle 8, decoded live",
         "checker given a layout with two bytes swapped", check_k1},
        {"K2", "a wake never makes two queue entries and is never lost",
         "wake of a running task enqueues it", check_k2},
        {"K4", "abort cancels idle, scheduled and running tasks; shields defer it",
         "abort ignores shields", check_k4},
        {"K5", "an awaiting task gets the value, the exception or the cancellation",
         "exceptions dropped at the task boundary", check_k5},
    };
}

}  // namespace blitz::conformance
