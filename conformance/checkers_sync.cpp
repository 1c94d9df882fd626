// X checkers for what issue 6 has built so far: the blocking pool (X1), the semaphore (X2),
// mutex and rwlock (X3), barrier, notify and once_cell (X4).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "checker_util.hpp"
#include "scenarios.hpp"
#include "registry.hpp"
#include "sched/rng.hpp"
#include "sched/test_support.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;

// On a one-worker runtime: lets every runnable task run until it blocks.
task<void> let_others_run(int rounds = 4) {
    for (int i = 0; i < rounds; ++i) co_await yield_now();
}

void note_max(std::atomic<long>& m, long v) {
    long cur = m.load();
    while (v > cur && !m.compare_exchange_weak(cur, v)) {
    }
}

// ---- X1 -----------------------------------------------------------------------------------

using detail::testing::gate;

// Threads never exceed the cap; idle threads retire; at shutdown every job has run or reports
// cancelled (never both, never neither); nothing hangs (the harness's watchdog).
outcome check_x1(const run_params& p, bool faulty) {
    outcome o;
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
            for (int i = 0; i < 200 && rt.metrics().blocking_threads < cap; ++i) std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(2ms);
            const auto threads = rt.metrics().blocking_threads;
            g.release();
            for (auto& h : hs) h.join();
            o.events += 24;
            const auto peak = rt.metrics().blocking_peak_threads;
            if (most.load() > static_cast<long>(cap) || peak > cap || threads > cap) {
                forbid(o, std::to_string(std::max<std::uint64_t>(peak, static_cast<std::uint64_t>(most.load()))) +
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
task<void> x2_ordered(std::uint64_t seed, semaphore::faults f, outcome& o) {
    detail::fast_rng rng(seed);
    semaphore s(0);
    s.set_faults(f);
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
    for (int step = 0; step < 64 && order.size() + (aborted ? 1 : 0) < static_cast<std::size_t>(n); ++step) {
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
                      std::to_string(s.available()) + " free != " + std::to_string(put_in) + " released");
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
        forbid(o, std::to_string(peak.load()) + " permits in use at once out of " + std::to_string(total));
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
            m.raw().set_faults({.lifo = faulty, .float_permits = false});
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
            if (log != std::vector<int>{1, 2}) forbid(o, "rwlock: the reader passed the queued writer");
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
    if (counter != 16L * per) forbid(o, "mutex counter " + std::to_string(counter) + " != " + std::to_string(16L * per));
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
        hs.push_back(rt.spawn([](barrier& b, int gens, std::vector<std::atomic<int>>& leaders) -> task<void> {
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
        if (n != 1) forbid(o, "barrier generation " + std::to_string(g) + " had " + std::to_string(n) + " leaders");
    }
    // Notify: permits do not accumulate; notify_all stores none.
    notify n;
    n.set_fault_accumulate(faulty);
    for (int i = 0; i < 3; ++i) n.notify_one();
    ++o.events;
    if (n.stored_permits() > 1) forbid(o, std::to_string(n.stored_permits()) + " notify permits stored");
    rt.block_on([](notify& n) -> task<void> { co_await n.notified(); }(n));
    n.notify_all();
    ++o.events;
    if (!faulty && n.stored_permits() != 0) forbid(o, "notify_all stored a permit");
    // OnceCell: one initializer for many concurrent callers, one value for all.
    once_cell<long> cell;
    std::atomic<int> inits{0};
    std::vector<join_handle<const long*>> gets;
    for (int t = 0; t < 16; ++t) {
        gets.push_back(rt.spawn([](once_cell<long>& cell, std::atomic<int>& inits) -> task<const long*> {
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
    if (inits.load() != 1) forbid(o, "once_cell initializer ran " + std::to_string(inits.load()) + " times");
    return o;
}

// ---- X5 -----------------------------------------------------------------------------------

// Producers and consumers on all workers through small channels (most sends wait): every value
// arrives exactly once, each consumer sees each producer's values in order, the length never
// exceeds the capacity, and when the producers finish the consumers drain and see the end.
outcome check_x5(const run_params& p, bool faulty) {
    outcome o;
    runtime rt(fresh(p.workers));
    const std::uint32_t per = p.quick ? 500 : 5000;
    constexpr int producers = 4, consumers = 3;
    for (std::size_t cap : {std::size_t{1}, std::size_t{3}}) {
        ++o.runs;
        std::vector<std::atomic<std::uint8_t>> seen(producers * per);
        std::atomic<long> order_breaks{0}, over_cap{0};
        std::vector<join_handle<void>> hs;
        {
            auto [tx, rx] = channel<std::uint64_t>(cap);
            tx.set_fault_drop_waiting_send(faulty);
            for (int q = 0; q < producers; ++q) {
                hs.push_back(rt.spawn([](sender<std::uint64_t> tx, std::uint64_t q, std::uint32_t n,
                                         std::atomic<long>& over) -> task<void> {
                    for (std::uint32_t i = 0; i < n; ++i) {
                        (void)co_await tx.send((q << 32) | i);
                        if (tx.len() > tx.capacity()) over.fetch_add(1);
                    }
                }(tx, static_cast<std::uint64_t>(q), per, over_cap)));
            }
            for (int c = 0; c < consumers; ++c) {
                hs.push_back(rt.spawn([](receiver<std::uint64_t> rx, std::uint32_t per,
                                         std::vector<std::atomic<std::uint8_t>>& seen,
                                         std::atomic<long>& breaks) -> task<void> {
                    std::int64_t last[producers] = {-1, -1, -1, -1};
                    while (auto v = co_await rx.recv()) {
                        const auto q = static_cast<std::size_t>(*v >> 32);
                        const auto i = static_cast<std::int64_t>(*v & 0xffffffffu);
                        if (i <= last[q]) breaks.fetch_add(1);
                        last[q] = i;
                        seen[q * per + static_cast<std::size_t>(i)].fetch_add(1);
                    }
                }(rx, per, seen, order_breaks)));
            }
        }
        for (auto& h : hs) h.join();  // consumers end only if closing woke and drained them
        std::size_t missing = 0, twice = 0;
        for (auto& x : seen) {
            ++o.events;
            missing += x.load() == 0;
            twice += x.load() > 1;
        }
        const std::string where = "capacity " + std::to_string(cap) + ": ";
        if (missing) forbid(o, where + std::to_string(missing) + " sent values never received");
        if (twice) forbid(o, where + std::to_string(twice) + " values received twice");
        if (order_breaks.load()) forbid(o, where + "a producer's values arrived out of order");
        if (over_cap.load()) forbid(o, where + "length above capacity");
    }
    return o;
}

// ---- X6 -----------------------------------------------------------------------------------

// Oneshot: across many pairs where the sender sends or just goes (at random), and the receiver
// may already be waiting, each receiver observes exactly one of value or closed. Broadcast:
// fast and slow subscribers on all workers: for each, values in send order, and received +
// lagged == sent. Watch: versions never go back and the last value is observed.
outcome check_x6(const run_params& p, bool faulty) {
    outcome o;
    runtime rt(fresh(p.workers));
    detail::fast_rng rng(p.seed);
    {
        ++o.runs;
        const int pairs = p.quick ? 300 : 3000;
        std::atomic<long> values{0}, closes{0}, sends{0};
        std::vector<join_handle<void>> hs;
        for (int i = 0; i < pairs; ++i) {
            auto [tx, rx] = oneshot<int>();
            hs.push_back(rt.spawn([](oneshot_receiver<int> rx, std::atomic<long>& v,
                                     std::atomic<long>& c) -> task<void> {
                auto r = co_await rx;
                (r ? v : c).fetch_add(1);
            }(std::move(rx), values, closes)));
            const bool send = rng.bounded(2) == 0;
            hs.push_back(rt.spawn([](oneshot_sender<int> tx, bool send, std::atomic<long>& s) -> task<void> {
                co_await yield_now();
                if (send && std::move(tx).send(1).sent()) s.fetch_add(1);
            }(std::move(tx), send, sends)));
        }
        for (auto& h : hs) h.join();
        o.events += static_cast<std::uint64_t>(pairs);
        if (values.load() + closes.load() != pairs || values.load() != sends.load()) {
            forbid(o, "oneshot: " + std::to_string(values.load()) + " values + " +
                          std::to_string(closes.load()) + " closes for " + std::to_string(pairs) +
                          " pairs and " + std::to_string(sends.load()) + " sends");
        }
    }
    {
        ++o.runs;
        const int sent = p.quick ? 2000 : 20000;
        auto [tx, rx0] = broadcast<int>(8);
        tx.set_fault_hide_lag(faulty);
        struct tally {
            long received = 0, lagged = 0, breaks = 0;
        };
        std::vector<join_handle<tally>> hs;
        for (int r = 0; r < 4; ++r) {
            hs.push_back(rt.spawn([](broadcast_receiver<int> rx, bool slow) -> task<tally> {
                tally t;
                int last = -1;
                for (;;) {
                    auto m = co_await rx.recv();
                    if (m.closed()) break;
                    if (m.lagged()) {
                        t.lagged += static_cast<long>(m.missed());
                        last += static_cast<int>(m.missed());
                        continue;
                    }
                    if (m.value() != last + 1) ++t.breaks;
                    last = m.value();
                    ++t.received;
                    if (slow) co_await yield_now();
                }
                co_return t;
            }(tx.subscribe(), r % 2 == 1)));
        }
        { auto drop = std::move(rx0); }
        rt.block_on([](broadcast_sender<int> tx, int n) -> task<void> {
            for (int i = 0; i < n; ++i) {
                tx.send(i);
                if (i % 16 == 0) co_await yield_now();
            }
        }(std::move(tx), sent));
        for (auto& h : hs) {
            const tally t = h.join();
            ++o.events;
            if (t.received + t.lagged != sent) {
                forbid(o, "broadcast: received " + std::to_string(t.received) + " + lagged " +
                              std::to_string(t.lagged) + " != sent " + std::to_string(sent));
            }
            if (t.breaks) forbid(o, "broadcast: values out of order");
        }
    }
    {
        ++o.runs;
        auto [tx, rx] = watch<int>(0);
        std::atomic<long> backwards{0};
        std::vector<join_handle<int>> hs;
        for (int r = 0; r < 3; ++r) {
            hs.push_back(rt.spawn([](watch_receiver<int> rx, std::atomic<long>& back) -> task<int> {
                int last = 0;
                std::uint64_t version = 0;
                while (co_await rx.changed()) {
                    auto [v, ver] = rx.borrow_and_update();
                    if (ver < version || v < last) back.fetch_add(1);
                    version = ver;
                    last = v;
                }
                co_return last;
            }(rx, backwards)));
        }
        const int n = p.quick ? 1000 : 10000;
        rt.block_on([](watch_sender<int> tx, int n) -> task<void> {
            for (int i = 1; i <= n; ++i) {
                tx.send(i);
                if (i % 8 == 0) co_await yield_now();
            }
        }(std::move(tx), n));
        for (auto& h : hs) {
            ++o.events;
            const int last = h.join();
            if (last != n) forbid(o, "watch: a receiver ended at " + std::to_string(last) + ", not the last value " + std::to_string(n));
        }
        if (backwards.load()) forbid(o, "watch: a version or value went backward");
    }
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
        {"X1", "blocking pool: threads <= cap, idle threads retire, every job runs or is cancelled",
         "the pool ignores its thread cap", check_x1},
        {"X2", "semaphore: FIFO grants, no free permit while a waiter queues, permits conserved",
         "released permits float into the free count while waiters queue", check_x2},
        {"X3", "mutex: one holder, FIFO handoff; rwlock: readers or one writer, writers not passed",
         "the mutex hands the lock to its newest waiter", check_x3},
        {"X4", "barrier: one leader per generation; notify: no permit accumulation; once_cell: once",
         "notify_one stores a permit per call", check_x4},
        {"X5", "bounded channel: exactly once, per-producer order, len <= capacity, close drains",
         "a send that had to wait reports success without delivering", check_x5},
        {"X6", "oneshot: value xor closed; broadcast: in order, received + lagged == sent; watch",
         "broadcast receivers skip lost values without reporting the lag", check_x6},
    };
}

}  // namespace blitz::conformance
