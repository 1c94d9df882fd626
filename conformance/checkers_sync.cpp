// SPDX-License-Identifier: MIT
// X checkers for the blocking pool (X1), the semaphore (X2), mutex and rwlock (X3), barrier,
// notify and once_cell (X4), and B2 (the budget on always-ready sync awaits). The channel and
// combinator checkers (X5-X7) are in checkers_chan.cpp.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz/testing.hpp"
#include "blitz_testing/scenarios.hpp"
#include "blitz_testing/test_support.hpp"
#include "checker_util.hpp"
#include "registry.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;

void note_max(std::atomic<long>& m, long v) {
    long cur = m.load();
    while (v > cur && !m.compare_exchange_weak(cur, v)) {
    }
}

// ---- X1 -----------------------------------------------------------------------------------

using detail::testing::gate;

// A burst of `cap` jobs submitted while one pool thread is idle gets a thread each: every job of
// the burst waits until all of them have started (a rendezvous that needs `cap` threads at
// once), giving up after `guard` (a hang guard, far above a thread's start). Returns the rounds
// in which a job gave up. Issue 45: a pool that started a thread only when none was idle
// passed X1's cap checks while such a burst timed out in 32 of 40 rounds.
int x1_burst_stalls(unsigned workers, bool faulty, int rounds, std::chrono::seconds guard) {
    constexpr unsigned cap = 3;
    int stalled = 0;
    for (int r = 0; r < rounds; ++r) {
        config c = fresh(workers);
        c.blocking_threads_max = cap;
        c.blocking_keep_alive = 10s;
        c.debug.blocking_one_idle_for_all = faulty;
        c.debug.blocking_wake_delay = 50ms;  // the burst is queued before the idle thread wakes
        runtime rt(c);
        rt.spawn_blocking([] {}).join();  // one thread, idle from here on
        for (int i = 0; i < 100'000 && rt.metrics().blocking_idle == 0; ++i) {
            std::this_thread::sleep_for(100us);
        }
        std::atomic<unsigned> started{0};
        std::atomic<bool> gave_up{false};
        std::vector<blocking_handle<void>> hs;
        for (unsigned i = 0; i < cap; ++i) {
            hs.push_back(rt.spawn_blocking([&started, &gave_up, guard] {
                started.fetch_add(1);
                const auto limit = std::chrono::steady_clock::now() + guard;
                while (started.load() < cap) {
                    if (std::chrono::steady_clock::now() > limit) {
                        gave_up = true;
                        return;
                    }
                    std::this_thread::sleep_for(50us);
                }
            }));
        }
        for (auto& h : hs) h.join();
        if (gave_up.load()) ++stalled;
        if (stalled && faulty) break;  // caught: each stalled round of the control costs seconds
    }
    return stalled;
}

// Threads never exceed the cap; idle threads retire; at shutdown every job has run or reports
// cancelled (never both, never neither); nothing hangs (the harness's watchdog); a burst gets a
// thread per job up to the cap (x1_burst_stalls). The control has two halves, each of which must
// be caught: the cap ignored, and one idle thread standing for every queued job.
outcome check_x1(const run_params& p, bool faulty) {
    outcome o;
    {
        const int rounds = p.quick ? 5 : 20;
        const int stalled = x1_burst_stalls(p.workers, faulty, rounds, faulty ? 1s : 10s);
        o.runs += rounds;
        o.events += rounds;
        if (stalled) {
            forbid(o, std::to_string(stalled) + " of " + std::to_string(rounds) +
                          " bursts of 3 jobs (cap 3, one thread idle) did not get a thread each");
        }
    }
    const std::uint64_t burst_violations = o.violations;
    const unsigned cap = 3;
    for (unsigned round = 0; round < (p.quick ? 3u : 10u); ++round) {
        ++o.runs;
        config c = fresh(p.workers);
        c.blocking_threads_max = cap;
        c.blocking_keep_alive = 5ms;
        c.debug.blocking_ignores_cap = faulty;
        {
            runtime rt(c);
            std::atomic<long> running{0}, most{0};
            gate g;
            std::vector<blocking_handle<void>> hs;
            for (int i = 0; i < 24; ++i) {
                hs.push_back(rt.spawn_blocking([&] {
                    note_max(most, running.fetch_add(1) + 1);
                    g.wait();
                    running.fetch_sub(1);
                }));
            }
            // Let the pool start whatever it will, then check what it started.
            for (int i = 0; i < 200 && rt.metrics().blocking_threads < cap; ++i)
                std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(2ms);
            const auto threads = rt.metrics().blocking_threads;
            g.release();
            for (auto& h : hs) h.join();
            o.events += 24;
            const auto peak = rt.metrics().blocking_peak_threads;
            if (most.load() > static_cast<long>(cap) || peak > cap || threads > cap) {
                forbid(o, std::to_string(std::max<std::uint64_t>(
                              peak, static_cast<std::uint64_t>(most.load()))) +
                              " blocking threads at once with a cap of " + std::to_string(cap));
            }
            // Idle threads retire after keep-alive (5 ms); allow a thousand times that.
            bool retired = false;
            for (int i = 0; i < 5000 && !retired; ++i) {
                retired = rt.metrics().blocking_threads == 0;
                if (!retired) std::this_thread::sleep_for(1ms);
            }
            ++o.events;
            if (!retired) forbid(o, "idle blocking threads did not retire after keep-alive");
        }
        // Shutdown: a running job finishes, the queued ones are cancelled, each exactly once.
        config one = fresh(p.workers);
        one.blocking_threads_max = 1;
        auto rt = std::make_unique<runtime>(one);
        gate g;
        std::atomic<bool> started{false};
        std::vector<std::atomic<int>> ran(11);
        std::vector<blocking_handle<void>> hs;
        for (int i = 0; i < 11; ++i) {
            hs.push_back(rt->spawn_blocking([&, i] {
                if (i == 0) {
                    started = true;
                    g.wait();
                }
                ran[static_cast<std::size_t>(i)].fetch_add(1);
            }));
        }
        while (!started.load()) std::this_thread::yield();
        std::thread stopper([&] { rt->shutdown(); });
        while (!hs[10].is_finished()) std::this_thread::yield();  // queued jobs cancelled first
        g.release();
        stopper.join();
        for (int i = 0; i < 11; ++i) {
            ++o.events;
            bool cancelled = false;
            try {
                hs[static_cast<std::size_t>(i)].join();
            } catch (const task_cancelled&) {
                cancelled = true;
            }
            const int r = ran[static_cast<std::size_t>(i)].load();
            if ((cancelled && r != 0) || (!cancelled && r != 1)) {
                forbid(o, "job " + std::to_string(i) + " ran " + std::to_string(r) +
                              " times and reported " + (cancelled ? "cancelled" : "done"));
            }
        }
    }
    if (faulty && (burst_violations == 0 || o.violations == burst_violations)) {
        o.violations = 0;  // each half of the control must be caught on its own
        o.detail = burst_violations == 0 ? "one idle thread for every queued job not caught"
                                         : "the cap ignored not caught";
    }
    return o;
}

// ---- X2 -----------------------------------------------------------------------------------

task<void> take_and_hold(semaphore& s, std::size_t n, int id, std::vector<int>& order,
                         std::vector<semaphore_permit>& kept) {
    auto permit = co_await s.acquire(n);
    order.push_back(id);
    kept.push_back(std::move(permit));
}

// One worker, deterministic: waiters queued in order with random needs; permits released in
// random chunks. After every release: no permit is free while anyone waits, grants complete in
// arrival order (as sets per release), and an aborted waiter's partial grant moves on. At the
// end every permit put in is accounted for.
task<void> x2_ordered(std::uint64_t seed, testing::semaphore_faults f, outcome& o) {
    detail::fast_rng rng(seed);
    semaphore s(0);
    testing::set_faults(s, f);
    std::vector<int> order;
    std::vector<semaphore_permit> kept;
    std::vector<join_handle<void>> hs;
    std::vector<std::size_t> need;
    const int n = 8;
    for (int i = 0; i < n; ++i) {
        need.push_back(1 + rng.bounded(3));
        hs.push_back(spawn(take_and_hold(s, need.back(), i, order, kept)));
        co_await let_others_run();
    }
    int victim = -1;  // a waiter aborted while still queued (chosen among the unserved)
    std::size_t put_in = 0;
    bool aborted = false;
    // Bounded, so a semaphore that stops serving its queue (the control) cannot hang us.
    for (int step = 0; step < 64 && order.size() + (aborted ? 1 : 0) < static_cast<std::size_t>(n);
         ++step) {
        const std::size_t chunk = 1 + rng.bounded(2);
        const std::size_t served_before = order.size();
        s.release(chunk);
        put_in += chunk;
        co_await let_others_run();
        // Waiters completed by one release resume in whatever order the scheduler runs them
        // (the last woken sits in the LIFO slot): what FIFO promises is which waiters one
        // release completes, so compare each release's batch as a set.
        std::sort(order.begin() + static_cast<std::ptrdiff_t>(served_before), order.end());
        ++o.events;
        if (s.waiters() > 0 && s.available() > 0) {
            forbid(o, std::to_string(s.available()) + " permits free while " +
                          std::to_string(s.waiters()) + " waiters are queued");
        }
        if (!aborted && order.size() >= static_cast<std::size_t>(n) / 2) {
            std::vector<int> waiting;
            for (int i = 0; i < n; ++i) {
                if (std::find(order.begin(), order.end(), i) == order.end()) waiting.push_back(i);
            }
            if (!waiting.empty()) {
                victim = waiting[rng.bounded(static_cast<std::uint32_t>(waiting.size()))];
                hs[static_cast<std::size_t>(victim)].abort();  // its partial grant must move on
                aborted = true;
                co_await let_others_run();
            }
        }
    }
    std::vector<int> expect;
    for (int i = 0; i < n; ++i) {
        if (i != victim) {
            expect.push_back(i);
        }
    }
    expect.resize(std::min(expect.size(), order.size()));  // served so far, in arrival order
    ++o.events;
    if (order.size() + (aborted ? 1 : 0) < static_cast<std::size_t>(n)) {
        forbid(o, std::to_string(n - static_cast<int>(order.size())) + " waiters never served");
        for (auto& h : hs) h.abort();
    }
    if (order != expect) {
        std::string got;
        for (int i : order) got += std::to_string(i) + " ";
        forbid(o, "grants out of arrival order: " + got);
    }
    std::size_t held = 0;
    for (auto& k : kept) held += k.count();
    ++o.events;
    if (f.float_permits) co_return;  // (the queue was abandoned above; nothing to conserve)
    if (held + s.available() != put_in) {
        forbid(o, "permits not conserved: " + std::to_string(held) + " held + " +
                      std::to_string(s.available()) + " free != " + std::to_string(put_in) +
                      " released");
    }
    kept.clear();
    for (auto& h : hs) {
        try {
            co_await h;
        } catch (const task_cancelled&) {
        }
    }
}

outcome check_x2(const run_params& p, bool faulty) {
    outcome o;
    {
        runtime rt(fresh(1));
        for (unsigned r = 0; r < (p.quick ? 20u : 200u); ++r) {
            ++o.runs;
            rt.block_on(x2_ordered(p.seed * 1000 + r, {.lifo = false, .float_permits = faulty}, o));
        }
    }
    // The control stops here: with permits floating, queued acquirers would never be served
    // and the random phase below could not finish.
    if (faulty) return o;
    // All workers: random acquires, holds and aborts; never more in use than there are
    // permits, and every permit comes back.
    runtime rt(fresh(p.workers));
    constexpr std::size_t total = 4;
    semaphore s(total);
    std::atomic<long> in_use{0}, peak{0};
    detail::fast_rng rng(p.seed);
    for (unsigned r = 0; r < (p.quick ? 10u : 60u); ++r) {
        ++o.runs;
        workloads::semaphore_churn_round(rt, s, total, rng, in_use, peak);
        o.events += 24;
        if (s.available() != total) {
            forbid(o, std::to_string(s.available()) + " permits free after the round, expected " +
                          std::to_string(total));
        }
    }
    if (peak.load() > static_cast<long>(total)) {
        forbid(o, std::to_string(peak.load()) + " permits in use at once out of " +
                      std::to_string(total));
    }
    return o;
}

// ---- X3 -----------------------------------------------------------------------------------

outcome check_x3(const run_params& p, bool faulty) {
    outcome o;
    {
        // One worker: the lock passes to waiters in arrival order.
        runtime rt(fresh(1));
        ++o.runs;
        rt.block_on([](outcome& o, bool faulty) -> task<void> {
            mutex m;
            testing::set_faults(m.raw(), {.lifo = faulty, .float_permits = false});
            std::vector<int> order;
            auto g = co_await m.lock();
            std::vector<join_handle<void>> hs;
            for (int i = 0; i < 6; ++i) {
                hs.push_back(spawn([](mutex& m, int i, std::vector<int>& order) -> task<void> {
                    auto g = co_await m.lock();
                    order.push_back(i);
                    co_await yield_now();
                }(m, i, order)));
                co_await let_others_run();
            }
            g.unlock();
            for (auto& h : hs) co_await h;
            ++o.events;
            if (order != std::vector<int>{0, 1, 2, 3, 4, 5}) forbid(o, "mutex handoff not FIFO");

            // rwlock: a queued writer blocks readers that arrive after it.
            rwlock l;
            std::vector<int> log;
            auto r1 = co_await l.read();
            auto w = spawn([](rwlock& l, std::vector<int>& log) -> task<void> {
                auto g = co_await l.write();
                log.push_back(1);
            }(l, log));
            co_await let_others_run();
            ++o.events;
            if (l.try_read()) forbid(o, "a new reader got in ahead of a queued writer");
            auto r2 = spawn([](rwlock& l, std::vector<int>& log) -> task<void> {
                auto g = co_await l.read();
                log.push_back(2);
            }(l, log));
            co_await let_others_run();
            r1.unlock();
            co_await w;
            co_await r2;
            ++o.events;
            if (log != std::vector<int>{1, 2})
                forbid(o, "rwlock: the reader passed the queued writer");
        }(o, faulty));
    }
    // All workers: at most one mutex holder, an exact counter; readers or one writer.
    runtime rt(fresh(p.workers));
    mutex m;
    rwlock l;
    std::atomic<int> holders{0}, readers{0}, writers{0};
    std::atomic<long> bad{0};
    long counter = 0;
    const int per = p.quick ? 200 : 2000;
    std::vector<join_handle<void>> hs;
    for (int t = 0; t < 16; ++t) {
        hs.push_back(rt.spawn([](mutex& m, rwlock& l, long& counter, int per, int t,
                                 std::atomic<int>& holders, std::atomic<int>& readers,
                                 std::atomic<int>& writers, std::atomic<long>& bad) -> task<void> {
            for (int i = 0; i < per; ++i) {
                {
                    auto g = co_await m.lock();
                    if (holders.fetch_add(1) != 0) bad.fetch_add(1);
                    const long v = counter;
                    if ((i + t) % 9 == 0) co_await yield_now();
                    counter = v + 1;
                    holders.fetch_sub(1);
                }
                if ((i + t) % 4 == 0) {
                    auto g = co_await l.write();
                    if (writers.fetch_add(1) != 0 || readers.load() != 0) bad.fetch_add(1);
                    co_await yield_now();
                    writers.fetch_sub(1);
                } else {
                    auto g = co_await l.read();
                    readers.fetch_add(1);
                    if (writers.load() != 0) bad.fetch_add(1);
                    co_await yield_now();
                    readers.fetch_sub(1);
                }
            }
        }(m, l, counter, per, t, holders, readers, writers, bad)));
    }
    for (auto& h : hs) h.join();
    ++o.runs;
    o.events += static_cast<std::uint64_t>(16 * per);
    if (bad.load()) forbid(o, std::to_string(bad.load()) + " overlapping holders");
    if (counter != 16L * per)
        forbid(o, "mutex counter " + std::to_string(counter) + " != " + std::to_string(16L * per));
    return o;
}

// ---- X4 -----------------------------------------------------------------------------------

outcome check_x4(const run_params& p, bool faulty) {
    outcome o;
    runtime rt(fresh(p.workers));
    // Barrier: one leader per generation, everybody passes, reusable.
    constexpr int parties = 5;
    const int gens = p.quick ? 50 : 500;
    barrier b(parties);
    std::vector<std::atomic<int>> leaders(static_cast<std::size_t>(gens));
    std::vector<join_handle<void>> hs;
    for (int t = 0; t < parties; ++t) {
        hs.push_back(rt.spawn(
            [](barrier& b, int gens, std::vector<std::atomic<int>>& leaders) -> task<void> {
                for (int g = 0; g < gens; ++g) {
                    auto r = co_await b.wait();
                    if (r.is_leader()) leaders[static_cast<std::size_t>(g)].fetch_add(1);
                }
            }(b, gens, leaders)));
    }
    for (auto& h : hs) h.join();
    ++o.runs;
    for (int g = 0; g < gens; ++g) {
        ++o.events;
        const int n = leaders[static_cast<std::size_t>(g)].load();
        if (n != 1)
            forbid(o, "barrier generation " + std::to_string(g) + " had " + std::to_string(n) +
                          " leaders");
    }
    // Notify: permits do not accumulate; notify_all stores none.
    notify n;
    testing::set_fault_accumulate(n, faulty);
    for (int i = 0; i < 3; ++i) n.notify_one();
    ++o.events;
    if (n.stored_permits() > 1)
        forbid(o, std::to_string(n.stored_permits()) + " notify permits stored");
    rt.block_on([](notify& n) -> task<void> { co_await n.notified(); }(n));
    n.notify_all();
    ++o.events;
    if (!faulty && n.stored_permits() != 0) forbid(o, "notify_all stored a permit");
    // OnceCell: one initializer for many concurrent callers, one value for all.
    once_cell<long> cell;
    std::atomic<int> inits{0};
    std::vector<join_handle<const long*>> gets;
    for (int t = 0; t < 16; ++t) {
        gets.push_back(
            rt.spawn([](once_cell<long>& cell, std::atomic<int>& inits) -> task<const long*> {
                co_return co_await cell.get_or_init([&inits]() -> task<long> {
                    inits.fetch_add(1);
                    co_await yield_now();
                    co_return 42L;
                });
            }(cell, inits)));
    }
    const long* first = gets[0].join();
    for (std::size_t i = 1; i < gets.size(); ++i) {
        ++o.events;
        if (gets[i].join() != first) forbid(o, "once_cell callers saw different values");
    }
    if (inits.load() != 1)
        forbid(o, "once_cell initializer ran " + std::to_string(inits.load()) + " times");
    return o;
}

// ---- B2 -----------------------------------------------------------------------------------

// A task looping on always-ready resources (a mutex; a channel it sends to and receives from)
// yields within the budget: the other task on its worker never waits more than 128 ready
// awaits. The scenario needs one worker, whatever the config's count.
outcome check_b2(const run_params& p, bool faulty) {
    outcome o;
    if (p.workers != 1 && !faulty) {
        o.applicable = false;  // one run suffices; it always uses one worker
        return o;
    }
    const unsigned budget = faulty ? 0 : config{}.coop_budget_per_poll;
    const int steps = p.quick ? 5000 : 50000;
    for (int kind : {0, 1}) {
        ++o.runs;
        const long run = workloads::longest_starvation(budget, kind, steps);
        const long bound = kind == 0 ? 128 : 64;  // one or two ready awaits per step
        o.events += static_cast<std::uint64_t>(steps);
        if (run > bound) {
            forbid(o, std::string(kind == 0 ? "mutex" : "channel") + ": the hog ran " +
                          std::to_string(run) + " steps without letting the other task run");
        }
        o.note += (o.note.empty() ? "" : "; ") + std::string(kind == 0 ? "mutex" : "channel") +
                  ": longest run " + std::to_string(run) + " steps";
    }
    return o;
}

}  // namespace

std::vector<checker> sync_checkers() {
    return {
        {"B2", "a task looping on always-ready mutex/channel awaits yields within 128 of them",
         "cooperative budget disabled (coop_budget_per_poll = 0)", check_b2},
        {"X1",
         "blocking pool: threads <= cap, a burst gets a thread per job up to it, idle threads "
         "retire, every job runs or is cancelled",
         "the pool ignores its thread cap; one idle thread stands for every queued job", check_x1},
        {"X2", "semaphore: FIFO grants, no free permit while a waiter queues, permits conserved",
         "released permits float into the free count while waiters queue", check_x2},
        {"X3", "mutex: one holder, FIFO handoff; rwlock: readers or one writer, writers not passed",
         "the mutex hands the lock to its newest waiter", check_x3},
        {"X4",
         "barrier: one leader per generation; notify: no permit accumulation; once_cell: once",
         "notify_one stores a permit per call", check_x4},
    };
}

}  // namespace blitz::conformance
