// SPDX-License-Identifier: MIT
// blitz's definitions of the benchmark workloads. The scheduler workloads keep the definitions of
// Tokio's benches/rt_multi_threaded.rs: where each spawn comes from and how completion is
// signalled (a blocking signal to the plain thread, as Tokio's benches use std::sync::mpsc).

#include "bench_workloads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <semaphore>
#include <stdexcept>
#include <thread>

#include "blitz/blitz.hpp"
#include "blitz/detail/timer_api.hpp"
#include "blitz_testing/workloads.hpp"  // conformance/: skynet

namespace blitz::bench {
namespace {

using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Sizes: the report's, or, with set_smoke(true), a hundredth (a smoke run under ThreadSanitizer
// on a loaded 2-core machine must finish in seconds: it shows completion, not speed).
int kSpawn = 10'000;
int kOps = 100'000;       // operations per primitive repetition (a few ms: stable)
int kBroadcast = 10'000;  // broadcast messages (the ring holds them all: no lag)
int kYielders = 200, kYields = 1'000, kSkynet = 1'000'000, kFib = 30, kChurnTasks = 1'000;
using done_signal = std::counting_semaphore<1 << 20>;

double since(steady::time_point t0) {
    return std::chrono::duration<double, std::nano>(steady::now() - t0).count();
}

rep timed(double ns) {
    rep r;
    r.ns = ns;
    return r;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Times `body` run by one task on the runtime (the task itself is not counted).
template <class Body>
rep timed_task(runtime& rt, Body body) {
    return timed(rt.block_on([](Body& body) -> task<double> {
        const auto t0 = steady::now();
        co_await body();
        co_return since(t0);
    }(body)));
}

void check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(what);
}

// ---- scheduler -------------------------------------------------------------------------------

void stall() {
    const auto start = steady::now();
    while (steady::now() - start < 10us) std::this_thread::yield();
}

// 10,000 spawns issued from inside a task of the runtime; each decrements a counter and the
// last signals the waiting plain thread.
rep spawn_many_local(runtime& rt) {
    std::atomic<int> rem{kSpawn};
    done_signal done(0);
    const auto t0 = steady::now();
    rt.block_on([](std::atomic<int>& rem, done_signal& done) -> task<void> {
        for (int i = 0; i < kSpawn; ++i) {
            spawn([](std::atomic<int>& rem, done_signal& done) -> task<void> {
                if (rem.fetch_sub(1, std::memory_order_relaxed) == 1) done.release();
                co_return;
            }(rem, done))
                .detach();
        }
        co_return;
    }(rem, done));
    done.acquire();
    return timed(since(t0));
}

task<void> await_all(std::vector<join_handle<void>>& hs) {
    for (auto& h : hs) co_await h;
}

// n spawns from the plain thread, then one task awaits every handle.
rep spawn_remote(runtime& rt, int n) {
    std::vector<join_handle<void>> hs;
    hs.reserve(static_cast<std::size_t>(n));
    const auto t0 = steady::now();
    for (int i = 0; i < n; ++i) hs.push_back(rt.spawn([]() -> task<void> { co_return; }()));
    rt.block_on(await_all(hs));
    return timed(since(t0));
}

rep spawn_many_remote_idle(runtime& rt) { return spawn_remote(rt, kSpawn); }

// Busy with 2 x workers tasks that yield and stall 10 us in a loop.
rep spawn_many_remote_busy1(runtime& rt) {
    std::atomic<bool> busy{true};
    std::vector<join_handle<void>> bg;
    for (unsigned i = 0; i < 2 * rt.num_workers(); ++i) {
        bg.push_back(rt.spawn([](std::atomic<bool>& busy) -> task<void> {
            while (busy.load(std::memory_order_relaxed)) {
                co_await yield_now();
                stall();
            }
        }(busy)));
    }
    const rep r = spawn_remote(rt, kSpawn);
    busy = false;
    for (auto& h : bg) h.join();
    return r;
}

// Busy with `workers` chains of tasks that stall 10 us and spawn their successor; 1,000 spawns.
task<void> busy_chain(std::atomic<bool>& busy, std::atomic<int>& live) {
    if (busy.load(std::memory_order_relaxed)) {
        stall();
        spawn(busy_chain(busy, live)).detach();
    } else {
        live.fetch_sub(1, std::memory_order_release);
    }
    co_return;
}

rep spawn_many_remote_busy2(runtime& rt) {
    std::atomic<bool> busy{true};
    std::atomic<int> live{static_cast<int>(rt.num_workers())};
    for (unsigned i = 0; i < rt.num_workers(); ++i) rt.spawn(busy_chain(busy, live)).detach();
    const rep r = spawn_remote(rt, 1'000);
    busy = false;
    while (live.load(std::memory_order_acquire) != 0) std::this_thread::yield();  // chains ended
    return r;
}

// 200 tasks spawned from the plain thread, each yielding 1,000 times, then signalling.
rep yield_many(runtime& rt) {
    done_signal done(0);
    const auto t0 = steady::now();
    for (int t = 0; t < kYielders; ++t) {
        rt.spawn([](done_signal& done) -> task<void> {
              for (int i = 0; i < kYields; ++i) co_await yield_now();
              done.release();
          }(done))
            .detach();
    }
    for (int t = 0; t < kYielders; ++t) done.acquire();
    return timed(since(t0));
}

// Counts down to the plain thread: the last one() releases `done`.
struct thread_countdown {
    std::atomic<int> left;
    done_signal done{0};
    explicit thread_countdown(int n) : left(n) {}
    void one() {
        if (left.fetch_sub(1, std::memory_order_relaxed) == 1) done.release();
    }
};

// Counts down to the root of a current-thread row: the last one() notifies it.
struct task_countdown {
    std::atomic<int> left;
    notify done;
    explicit task_countdown(int n) : left(n) {}
    void one() {
        if (left.fetch_sub(1, std::memory_order_relaxed) == 1) done.notify_one();
    }
};

// One of 1,000 rounds: a task that spawns a responder and exchanges two oneshots with it, then
// counts down (a thread_countdown, or a task_countdown in the current-thread column).
template <class Countdown>
task<void> ping_round(Countdown& c) {
    auto [tx1, rx1] = oneshot<int>();
    auto [tx2, rx2] = oneshot<int>();
    spawn([](oneshot_receiver<int> rx1, oneshot_sender<int> tx2) -> task<void> {
        (void)co_await rx1;
        (void)std::move(tx2).send(1);
    }(std::move(rx1), std::move(tx2)))
        .detach();
    (void)std::move(tx1).send(1);
    (void)co_await rx2;
    c.one();
}

rep ping_pong(runtime& rt) {
    thread_countdown c(1'000);
    const auto t0 = steady::now();
    rt.block_on([](thread_countdown& c) -> task<void> {
        spawn([](thread_countdown& c) -> task<void> {
            for (int i = 0; i < 1'000; ++i) spawn(ping_round(c)).detach();
            co_return;
        }(c))
            .detach();
        co_return;
    }(c));
    c.done.acquire();
    return timed(since(t0));
}

// A chain of 1,000 tasks, each spawning the next; the last counts down (a countdown of 1).
template <class Countdown>
task<void> chain_link(Countdown& c, int n) {
    if (n == 0) {
        c.one();
    } else {
        spawn(chain_link(c, n - 1)).detach();
    }
    co_return;
}

// The first link is spawned from the plain thread, as in Tokio's benchmark: its block_on runs
// the future on the calling thread, so the spawn inside it comes from outside the workers and
// block_on itself wakes nobody. blitz's block_on runs its task on a worker, which put a worker
// wake and a wake back of the caller in front of the chain (about 80 of the row's 160-180 us at
// 4 workers on the KVM VM, with about 45 ns a link).
rep chained_spawn(runtime& rt) {
    thread_countdown c(1);
    const auto t0 = steady::now();
    rt.spawn(chain_link(c, 1'000)).detach();
    c.done.acquire();
    return timed(since(t0));
}

// ---- the current-thread column (issue 47) ----------------------------------------------------
// A current-thread runtime runs only while a thread waits in block_on, so these shapes keep the
// whole row inside one block_on: the last task notifies the root (a task_countdown) instead of
// a plain thread's semaphore (tokio-peer --current-thread runs the same shapes with
// tokio::sync::Notify).

rep spawn_many_local_ct(runtime& rt) {
    task_countdown c(kSpawn);
    const auto t0 = steady::now();
    rt.block_on([](task_countdown& c) -> task<void> {
        for (int i = 0; i < kSpawn; ++i) {
            spawn([](task_countdown& c) -> task<void> {
                c.one();
                co_return;
            }(c))
                .detach();
        }
        co_await c.done.notified();
    }(c));
    return timed(since(t0));
}

rep yield_many_ct(runtime& rt) {
    task_countdown c(kYielders);
    const auto t0 = steady::now();
    rt.block_on([](task_countdown& c) -> task<void> {
        for (int t = 0; t < kYielders; ++t) {
            spawn([](task_countdown& c) -> task<void> {
                for (int i = 0; i < kYields; ++i) co_await yield_now();
                c.one();
            }(c))
                .detach();
        }
        co_await c.done.notified();
    }(c));
    return timed(since(t0));
}

rep ping_pong_ct(runtime& rt) {
    task_countdown c(1'000);
    const auto t0 = steady::now();
    rt.block_on([](task_countdown& c) -> task<void> {
        spawn([](task_countdown& c) -> task<void> {
            for (int i = 0; i < 1'000; ++i) spawn(ping_round(c)).detach();
            co_return;
        }(c))
            .detach();
        co_await c.done.notified();
    }(c));
    return timed(since(t0));
}

rep chained_spawn_ct(runtime& rt) {
    task_countdown c(1);
    const auto t0 = steady::now();
    rt.block_on([](task_countdown& c) -> task<void> {
        spawn(chain_link(c, 1'000)).detach();
        co_await c.done.notified();
    }(c));
    return timed(since(t0));
}

// ---- fork-join and fan-out ------------------------------------------------------------------

rep skynet_1m(runtime& rt) {
    const auto t0 = steady::now();
    const std::uint64_t n = static_cast<std::uint64_t>(kSkynet);
    const std::uint64_t sum = rt.block_on(workloads::skynet(0, n));
    const double ns = since(t0);
    check(sum == n * (n - 1) / 2, "skynet: wrong sum");
    return timed(ns);
}

task<std::uint64_t> fib(int n) {
    if (n < 2) co_return static_cast<std::uint64_t>(n);
    auto a = spawn(fib(n - 1));
    auto b = spawn(fib(n - 2));
    co_return co_await a + co_await b;
}

rep fib_30(runtime& rt) {
    const auto t0 = steady::now();
    const std::uint64_t v = rt.block_on(fib(kFib));
    const double ns = since(t0);
    check(v == (kFib == 30 ? 832040u : 6765u), "fib: wrong value");
    return timed(ns);
}

// The woken side of the wake rows: nanoseconds from the send's timestamp to running again.
task<double> ns_since_sent(oneshot_receiver<steady::time_point> rx) {
    auto sent = co_await rx;
    co_return std::chrono::duration<double, std::nano>(steady::now() - *sent).count();
}

// A plain thread wakes a task on an idle runtime (its workers parked): the time from the send
// to the woken task running. 100 samples, each after 1 ms of idleness.
rep wake_latency(runtime& rt) {
    rep r;
    for (int i = 0; i < 100; ++i) {
        auto [tx, rx] = oneshot<steady::time_point>();
        auto h = rt.spawn(ns_since_sent(std::move(rx)));
        std::this_thread::sleep_for(1ms);
        (void)std::move(tx).send(steady::now());
        r.samples_ns.push_back(h.join());
    }
    r.ns = median(r.samples_ns);
    return r;
}

// The same wake from inside the runtime (issue 45): a task sleeps 1 ms, then sends on a oneshot
// that another task awaits, and awaits that task; the time from the send to the woken task
// running. The woken task goes to the sender's worker (its LIFO slot), which runs it when the
// sender suspends on the join: no thread is woken. Go's and Tokio's rows do the same from a
// goroutine and a spawned task. 100 samples.
rep wake_latency_task(runtime& rt) {
    rep r;
    r.samples_ns = rt.block_on([]() -> task<std::vector<double>> {
        std::vector<double> out;
        for (int i = 0; i < 100; ++i) {
            auto [tx, rx] = oneshot<steady::time_point>();
            auto h = spawn(ns_since_sent(std::move(rx)));
            co_await sleep(1ms);
            (void)std::move(tx).send(steady::now());
            out.push_back(co_await h);
        }
        co_return out;
    }());
    r.ns = median(r.samples_ns);
    return r;
}

// ---- primitives -----------------------------------------------------------------------------

// Runs `per_task(i)` in `n` tasks at once and times until all finished.
template <class Body>
rep timed_tasks(runtime& rt, int n, Body per_task) {
    return timed_task(rt, [&]() -> task<void> {
        std::vector<join_handle<void>> hs;
        for (int i = 0; i < n; ++i) hs.push_back(spawn(per_task(i)));
        for (auto& h : hs) co_await h;
    });
}

rep mutex_uncontended(runtime& rt) {
    mutex m;
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) auto g = co_await m.lock();
    });
}

rep mutex_contended(runtime& rt) {
    mutex m;
    return timed_tasks(rt, 4, [&](int) -> task<void> {
        for (int i = 0; i < kOps / 4; ++i) auto g = co_await m.lock();
    });
}

rep rwlock_read(runtime& rt) {
    rwlock l;
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) auto g = co_await l.read();
    });
}

rep rwlock_write(runtime& rt) {
    rwlock l;
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) auto g = co_await l.write();
    });
}

// 4 readers x 20,000 reads and 2 writers x 10,000 writes.
rep rwlock_contended(runtime& rt) {
    rwlock l;
    return timed_tasks(rt, 6, [&](int t) -> task<void> {
        if (t < 4) {
            for (int i = 0; i < kOps / 5; ++i) auto g = co_await l.read();
        } else {
            for (int i = 0; i < kOps / 10; ++i) auto g = co_await l.write();
        }
    });
}

rep semaphore_uncontended(runtime& rt) {
    semaphore s(1);
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) auto p = co_await s.acquire();
    });
}

// 8 tasks x 12,500 acquisitions on 2 permits.
rep semaphore_contended(runtime& rt) {
    semaphore s(2);
    return timed_tasks(rt, 8, [&](int) -> task<void> {
        for (int i = 0; i < kOps / 8; ++i) auto p = co_await s.acquire();
    });
}

// Sends into a channel with room for all of them (received afterwards, untimed).
rep channel_send(runtime& rt) {
    auto [tx, rx] = channel<std::uint64_t>(kOps);
    const rep r = timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) (void)co_await tx.send(1);
    });
    rt.block_on([](receiver<std::uint64_t>& rx) -> task<void> {
        for (int i = 0; i < kOps; ++i) (void)co_await rx.recv();
    }(rx));
    return r;
}

// Sends n ones into a channel with room for them (untimed set-up of the receive rows).
void fill(runtime& rt, sender<std::uint64_t>& tx, int n) {
    rt.block_on([](sender<std::uint64_t>& tx, int n) -> task<void> {
        for (int i = 0; i < n; ++i) (void)co_await tx.send(1);
    }(tx, n));
}

// Receives from a channel filled beforehand (untimed).
rep channel_recv(runtime& rt) {
    auto [tx, rx] = channel<std::uint64_t>(kOps);
    fill(rt, tx, kOps);
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) (void)co_await rx.recv();
    });
}

// A send then a receive by one task.
rep channel_roundtrip(runtime& rt) {
    auto [tx, rx] = channel<std::uint64_t>(1'024);
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            (void)co_await tx.send(1);
            (void)co_await rx.recv();
        }
    });
}

// 4 producers x 25,000 messages, 4 consumers, capacity 128; every message is received once.
rep channel_mpmc(runtime& rt) {
    std::atomic<std::uint64_t> got{0};
    rep r;
    {
        auto [tx, rx] = channel<std::uint64_t>(128);
        r = timed_task(rt, [&, tx = std::move(tx), rx = std::move(rx)]() mutable -> task<void> {
            std::vector<join_handle<void>> hs;
            for (int p = 0; p < 4; ++p) {
                hs.push_back(spawn([](sender<std::uint64_t> tx) -> task<void> {
                    for (int i = 0; i < kOps / 4; ++i) (void)co_await tx.send(1);
                }(tx)));
            }
            for (int c = 0; c < 4; ++c) {
                hs.push_back(spawn(
                    [](receiver<std::uint64_t> rx, std::atomic<std::uint64_t>& got) -> task<void> {
                        while (auto v = co_await rx.recv())
                            got.fetch_add(*v, std::memory_order_relaxed);
                    }(rx, got)));
            }
            {
                auto drop_tx = std::move(tx);
                auto drop_rx = std::move(rx);
            }  // only the tasks' copies remain
            for (auto& h : hs) co_await h;
        });
    }
    check(got.load() == static_cast<std::uint64_t>(kOps), "mpmc: a message was lost or duplicated");
    return r;
}

rep oneshot_row(runtime& rt) {
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            auto [tx, rx] = oneshot<std::uint64_t>();
            (void)std::move(tx).send(1);
            (void)co_await rx;
        }
    });
}

// One sender, 4 receivers, capacity 16,384 (nobody lags): every receiver gets every message.
rep broadcast_4rx(runtime& rt) {
    auto [tx, rx] = broadcast<std::uint64_t>(16'384);
    std::atomic<std::uint64_t> got{0};
    const rep r = timed_task(rt, [&]() -> task<void> {
        std::vector<join_handle<void>> hs;
        for (int c = 0; c < 4; ++c) {
            hs.push_back(spawn([](broadcast_receiver<std::uint64_t> rx,
                                  std::atomic<std::uint64_t>& got) -> task<void> {
                std::uint64_t n = 0;
                for (int i = 0; i < kBroadcast; ++i) n += (co_await rx.recv()).has_value() ? 1 : 0;
                got.fetch_add(n, std::memory_order_relaxed);
            }(rx.resubscribe(), got)));
        }
        for (int i = 0; i < kBroadcast; ++i) tx.send(1);
        for (auto& h : hs) co_await h;
    });
    check(got.load() == 4u * kBroadcast, "broadcast: a receiver missed a message");
    return r;
}

rep watch_row(runtime& rt) {
    auto [tx, rx] = watch<std::uint64_t>(0);
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            tx.send(static_cast<std::uint64_t>(i));
            (void)co_await rx.changed();
            (void)rx.borrow_and_update();
        }
    });
}

rep once_cell_get(runtime& rt) {
    once_cell<std::uint64_t> c;
    (void)c.set(7);
    std::uint64_t sum = 0;
    const rep r = timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) sum += *c.get();
        co_return;
    });
    check(sum == 7u * kOps, "once_cell: wrong value");
    return r;
}

rep once_cell_set(runtime& rt) {
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            once_cell<std::uint64_t> c;
            (void)c.set(static_cast<std::uint64_t>(i));
        }
        co_return;
    });
}

// 4 tasks x 25,000 waits on a barrier of 4.
rep barrier_row(runtime& rt) {
    barrier b(4);
    return timed_tasks(rt, 4, [&](int) -> task<void> {
        for (int i = 0; i < kOps / 4; ++i) (void)co_await b.wait();
    });
}

rep notify_row(runtime& rt) {
    notify n;
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            n.notify_one();
            co_await n.notified();
        }
    });
}

// ---- the reference runtime's definitions --------------------------------------------------
// The reference publishes four ratios against Tokio (channel send 0.47x, oneshot 0.25x, watch
// 0.30x, barrier 0.04x). Its rows are single-threaded fast paths, not the awaiting rows above:
// try_send into a channel with room, oneshot create + send + try_recv, watch send + borrow
// (no wait for the change), and a barrier of one party created and waited on each time. These
// four rows reproduce those definitions (inside a task here; the reference ran them outside a
// runtime where it could), so the published ratios compare like with like.

std::uint64_t g_sink;  // keeps the optimizer from dropping a value a row only reads
void keep(std::uint64_t v) { __atomic_store_n(&g_sink, v, __ATOMIC_RELAXED); }

rep channel_try_send(runtime& rt) {
    auto [tx, rx] = channel<std::uint64_t>(kOps);
    const rep r = timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) check(tx.try_send(1).sent(), "channel_try_send: full");
        co_return;
    });
    int left = 0;
    while (rx.try_recv()) ++left;
    check(left == kOps, "channel_try_send: a value went missing");
    return r;
}

rep oneshot_try_recv(runtime& rt) {
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            auto [tx, rx] = oneshot<std::uint64_t>();
            (void)std::move(tx).send(static_cast<std::uint64_t>(i));
            keep(*rx.try_recv());
        }
        co_return;
    });
}

// The same definition with blitz::oneshot_cell, the oneshot whose state lives in the receiving
// object: no allocation per oneshot (Tokio's side of this row is its oneshot_try_recv body).
rep oneshot_cell_try_recv(runtime& rt) {
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            oneshot_cell<std::uint64_t> cell;
            (void)cell.make_sender().send(static_cast<std::uint64_t>(i));
            keep(*cell.try_recv());
        }
        co_return;
    });
}

rep watch_send_borrow(runtime& rt) {
    auto [tx, rx] = watch<std::uint64_t>(0);
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            tx.send(static_cast<std::uint64_t>(i));
            keep(rx.borrow());
        }
        co_return;
    });
}

rep barrier_new_1(runtime& rt) {
    return timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            barrier b(1);
            keep((co_await b.wait()).is_leader());
        }
    });
}

// ---- select and timeout ---------------------------------------------------------------------

// A select over two receives that both hold a value: the first argument wins and the second is
// dropped untouched (Tokio: select! with `biased;`). The cost of deciding inside the task.
rep select_ready(runtime& rt) {
    auto [tx1, rx1] = channel<std::uint64_t>(kOps);
    auto [tx2, rx2] = channel<std::uint64_t>(1);
    fill(rt, tx1, kOps);
    fill(rt, tx2, 1);
    std::uint64_t firsts = 0;
    rep r = timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            auto v = co_await select(rx1.recv(), rx2.recv());
            firsts += v.index() == 0;
        }
    });
    check(firsts == static_cast<std::uint64_t>(kOps) && rx2.len() == 1,
          "select_ready: a loser was completed");
    return r;
}

// A timeout around a receive that is ready: the deadline is computed and no timer is armed.
rep timeout_ready(runtime& rt) {
    auto [tx, rx] = channel<std::uint64_t>(kOps);
    fill(rt, tx, kOps);
    std::uint64_t got = 0;
    rep r = timed_task(rt, [&]() -> task<void> {
        for (int i = 0; i < kOps; ++i) {
            auto v = co_await timeout(std::chrono::seconds(1), rx.recv());
            got += !v.timed_out();
        }
    });
    check(got == static_cast<std::uint64_t>(kOps), "timeout_ready: a ready receive timed out");
    return r;
}

// ---- timers ---------------------------------------------------------------------------------

// Arms a timer with a spread-out deadline (1 ms to 100 s ahead) and cancels it, `n` times.
task<void> arm_cancel(int n, std::uint64_t seed) {
    auto& drv = detail::current_timers();
    const auto t0 = detail::timers_now(drv);
    detail::timer_slot s;
    for (int i = 0; i < n; ++i) {
        const auto ms = 1 + (seed + static_cast<std::uint64_t>(i) * 7919) % 100'000;
        detail::timers_arm(drv, s, t0 + std::chrono::milliseconds(ms),
                           detail::current_task()->make_waker());
        detail::timers_disarm(drv, s);
    }
    co_return;
}

rep timer_insert_cancel(runtime& rt) {
    return timed_task(rt, [&]() -> task<void> { co_await arm_cancel(kOps, 0); });
}

// 1,000 tasks on every worker, each inserting and cancelling 1,000 timers.
rep timer_churn_1m(runtime& rt) {
    return timed_tasks(rt, kChurnTasks, [](int t) {
        return arm_cancel(kChurnTasks, static_cast<std::uint64_t>(t) * 104729);
    });
}

// sleep(1 ms) lateness (actual - requested), 50 samples; `busy`: one self-waking task per worker
// doing ~20 us of work between yields.
rep sleep_lateness(runtime& rt, bool busy) {
    std::atomic<bool> stop{false};
    std::vector<join_handle<void>> hogs;
    if (busy) {
        for (unsigned i = 0; i < rt.num_workers(); ++i) {
            hogs.push_back(rt.spawn([](std::atomic<bool>& stop) -> task<void> {
                volatile std::uint64_t x = 0;
                while (!stop.load(std::memory_order_relaxed)) {
                    for (int i = 0; i < 20'000; ++i) x = x + i;
                    co_await yield_now();
                }
            }(stop)));
        }
    }
    rep r;
    r.samples_ns = rt.block_on([]() -> task<std::vector<double>> {
        std::vector<double> late;
        for (int i = 0; i < 50; ++i) {
            const auto t0 = steady::now();
            co_await sleep(1ms);
            late.push_back(since(t0) - 1e6);
        }
        co_return late;
    }());
    stop = true;
    for (auto& h : hogs) h.join();
    r.ns = median(r.samples_ns);
    return r;
}

}  // namespace

void set_smoke(bool on) noexcept {
    const int div = on ? 100 : 1;
    kSpawn = 10'000 / div;
    kOps = 100'000 / div;
    kBroadcast = 10'000 / div;
    kYielders = on ? 20 : 200;
    kYields = on ? 100 : 1'000;
    kSkynet = on ? 10'000 : 1'000'000;
    kFib = on ? 20 : 30;
    kChurnTasks = on ? 100 : 1'000;
}

const char* kind_name(kind k) noexcept {
    switch (k) {
        case kind::scheduler:
            return "scheduler";
        case kind::forkjoin:
            return "fork-join";
        case kind::primitive:
            return "primitive";
        case kind::timer:
            return "timer";
        case kind::latency:
            return "latency";
    }
    return "?";
}

const std::vector<workload>& workloads() {
    static const std::vector<workload> all = {
        {"spawn_many_local", kind::scheduler, kSpawn, spawn_many_local, spawn_many_local_ct},
        {"spawn_many_remote_idle", kind::scheduler, kSpawn, spawn_many_remote_idle},
        {"spawn_many_remote_busy1", kind::scheduler, kSpawn, spawn_many_remote_busy1},
        {"spawn_many_remote_busy2", kind::scheduler, 1'000, spawn_many_remote_busy2},
        {"yield_many", kind::scheduler, 200'000, yield_many, yield_many_ct},
        {"ping_pong", kind::scheduler, 1'000, ping_pong, ping_pong_ct},
        {"chained_spawn", kind::scheduler, 1'000, chained_spawn, chained_spawn_ct},
        {"skynet_1m", kind::forkjoin, 1'111'111, skynet_1m},
        {"fib_30", kind::forkjoin, 2'692'537, fib_30},
        {"wake_latency", kind::latency, 1, wake_latency},
        {"wake_latency_task", kind::latency, 1, wake_latency_task},
        {"mutex", kind::primitive, kOps, mutex_uncontended},
        {"mutex_contended", kind::primitive, kOps, mutex_contended},
        {"rwlock_read", kind::primitive, kOps, rwlock_read},
        {"rwlock_write", kind::primitive, kOps, rwlock_write},
        {"rwlock_contended", kind::primitive, kOps, rwlock_contended},
        {"semaphore", kind::primitive, kOps, semaphore_uncontended},
        {"semaphore_contended", kind::primitive, kOps, semaphore_contended},
        {"channel_send", kind::primitive, kOps, channel_send},
        {"channel_recv", kind::primitive, kOps, channel_recv},
        {"channel_roundtrip", kind::primitive, kOps, channel_roundtrip},
        {"channel_mpmc", kind::primitive, kOps, channel_mpmc},
        {"oneshot", kind::primitive, kOps, oneshot_row},
        {"broadcast_4rx", kind::primitive, kBroadcast, broadcast_4rx},
        {"watch", kind::primitive, kOps, watch_row},
        {"once_cell_get", kind::primitive, kOps, once_cell_get},
        {"once_cell_set", kind::primitive, kOps, once_cell_set},
        {"barrier", kind::primitive, kOps, barrier_row},
        {"notify", kind::primitive, kOps, notify_row},
        {"channel_try_send", kind::primitive, kOps, channel_try_send},
        {"oneshot_try_recv", kind::primitive, kOps, oneshot_try_recv},
        {"oneshot_cell_try_recv", kind::primitive, kOps, oneshot_cell_try_recv},
        {"watch_send_borrow", kind::primitive, kOps, watch_send_borrow},
        {"barrier_new_1", kind::primitive, kOps, barrier_new_1},
        {"select_ready", kind::primitive, kOps, select_ready},
        {"timeout_ready", kind::primitive, kOps, timeout_ready},
        {"timer_insert_cancel", kind::timer, kOps, timer_insert_cancel},
        {"timer_churn_1m", kind::timer, 1'000'000, timer_churn_1m},
        {"sleep_lateness_idle", kind::latency, 1,
         [](runtime& rt) { return sleep_lateness(rt, false); }},
        {"sleep_lateness_busy", kind::latency, 1,
         [](runtime& rt) { return sleep_lateness(rt, true); }},
    };
    return all;
}

}  // namespace blitz::bench
