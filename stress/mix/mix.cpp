// SPDX-License-Identifier: MIT
#include "mix.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <thread>
#include <utility>

#include "blitz/blitz.hpp"
#include "blitz/blocking.hpp"
#include "blitz_testing/counted_payload.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz::stress_mix {
namespace {

using namespace std::chrono_literals;
using rng_t = std::mt19937_64;
using clock_t_ = std::chrono::steady_clock;

// What one round of a workload checked, and what went wrong (empty: nothing).
struct outcome {
    std::uint64_t ops = 0;
    std::string failure;
};

template <class... A>
std::string say(A&&... a) {
    std::ostringstream o;
    (o << ... << a);
    return o.str();
}

using payload = workloads::counted_payload;

// Each payload id delivered at most once; the count of deliveries.
struct ledger {
    std::vector<std::atomic<std::uint8_t>> seen;
    std::atomic<long> delivered{0}, twice{0};
    explicit ledger(std::size_t n) : seen(n) {}
    void got(std::uint32_t id) {
        delivered.fetch_add(1);
        if (seen[id].fetch_add(1) != 0) twice.fetch_add(1);
    }
};

unsigned long tree_nodes(unsigned depth, unsigned width) {
    unsigned long n = 1, level = 1;
    for (unsigned d = 0; d < depth; ++d) n += (level *= width);
    return n;
}

// ---- the workloads --------------------------------------------------------------------------

outcome spawn_tree(runtime& rt, rng_t& r) {
    const unsigned depth = 1 + static_cast<unsigned>(r() % 4);
    const unsigned width = 2 + static_cast<unsigned>(r() % 6);
    const unsigned long want = tree_nodes(depth, width);
    const unsigned long got = rt.spawn(workloads::tree(depth, width)).join();
    if (got != want)
        return {want, say("tree(", depth, ", ", width, ") ran ", got, " of ", want, " tasks")};
    return {want, {}};
}

outcome spawn_chain(runtime& rt, rng_t& r) {
    const unsigned long n = 1 + r() % 3000;
    const unsigned long got = rt.spawn(workloads::chain(n)).join();
    if (got != n) return {n, say("a chain of ", n, " spawns counted ", got)};
    return {n, {}};
}

task<void> yielder(int yields, std::atomic<long>& done) {
    for (int k = 0; k < yields; ++k) co_await yield_now();
    done.fetch_add(1);
}

outcome yields(runtime& rt, rng_t& r) {
    const int tasks = 1 + static_cast<int>(r() % 64), each = 1 + static_cast<int>(r() % 40);
    std::atomic<long> done{0};
    std::vector<join_handle<void>> hs;
    for (int i = 0; i < tasks; ++i) hs.push_back(rt.spawn(yielder(each, done)));
    for (auto& h : hs) h.join();
    if (done.load() != tasks)
        return {0, say(done.load(), " of ", tasks, " yielding tasks finished")};
    return {static_cast<std::uint64_t>(tasks) * static_cast<std::uint64_t>(each), {}};
}

task<void> locked_increments(mutex& m, unsigned long& counter, int n) {
    for (int i = 0; i < n; ++i) {
        auto g = co_await m.lock();
        const unsigned long v = counter;
        if (i % 4 == 0) co_await yield_now();  // hold the lock across a suspension
        counter = v + 1;
    }
}

outcome mutex_counter(runtime& rt, rng_t& r) {
    const int tasks = 2 + static_cast<int>(r() % 12), each = 1 + static_cast<int>(r() % 100);
    mutex m;
    unsigned long counter = 0;
    std::vector<join_handle<void>> hs;
    for (int i = 0; i < tasks; ++i) hs.push_back(rt.spawn(locked_increments(m, counter, each)));
    for (auto& h : hs) h.join();
    const unsigned long want = static_cast<unsigned long>(tasks) * static_cast<unsigned long>(each);
    if (counter != want) return {want, say("the mutex let ", want - counter, " increments race")};
    return {want, {}};
}

task<void> permit_user(semaphore& s, std::atomic<long>& held, long cap, std::atomic<long>& over,
                       int n, std::uint64_t seed) {
    rng_t r(seed);
    for (int i = 0; i < n; ++i) {
        const std::size_t want = 1 + r() % 2;
        auto p = co_await s.acquire(want);
        // Counted while the permits are held, also when an abort ends the task in the yield.
        struct holding {
            std::atomic<long>& held;
            long n;
            ~holding() { held.fetch_sub(n); }
        } h{held, static_cast<long>(want)};
        if (held.fetch_add(h.n) + h.n > cap) over.fetch_add(1);
        if (r() % 2) co_await yield_now();
    }
}

outcome semaphore_aborts(runtime& rt, rng_t& r) {
    const long cap = 2 + static_cast<long>(r() % 4);
    const int tasks = 2 + static_cast<int>(r() % 10), each = 1 + static_cast<int>(r() % 50);
    semaphore s(static_cast<std::size_t>(cap));
    std::atomic<long> held{0}, over{0};
    std::vector<join_handle<void>> hs;
    for (int i = 0; i < tasks; ++i)
        hs.push_back(rt.spawn(permit_user(s, held, cap, over, each, r())));
    for (auto& h : hs)
        if (r() % 3 == 0) h.abort();  // waiting, holding or done: permits must come back
    for (auto& h : hs) {
        try {
            h.join();
        } catch (const task_cancelled&) {
        }
    }
    if (over.load())
        return {0, say("more than ", cap, " permits were held at once ", over.load(), " times")};
    if (s.available() != static_cast<std::size_t>(cap))
        return {0,
                say("after aborts the semaphore has ", s.available(), " of its ", cap, " permits")};
    return {static_cast<std::uint64_t>(tasks) * static_cast<std::uint64_t>(each), {}};
}

task<void> ordered_producer(sender<std::uint64_t> tx, std::uint64_t p, std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint64_t v = (p << 32) | i;
        (void)co_await tx.send(v);
    }
}

task<void> ordered_consumer(receiver<std::uint64_t> rx, std::uint32_t per, ledger& l,
                            std::atomic<long>& breaks, int producers) {
    std::vector<std::int64_t> last(static_cast<std::size_t>(producers), -1);
    while (auto v = co_await rx.recv()) {
        const auto p = static_cast<std::size_t>(*v >> 32);
        const auto i = static_cast<std::int64_t>(*v & 0xffffffffu);
        if (i <= last[p]) breaks.fetch_add(1);
        last[p] = i;
        l.got(static_cast<std::uint32_t>(p * per + static_cast<std::size_t>(i)));
    }
}

outcome channel_mpmc(runtime& rt, rng_t& r) {
    const std::size_t capacity = 1 + r() % 8;
    const int producers = 1 + static_cast<int>(r() % 6), consumers = 1 + static_cast<int>(r() % 6);
    const std::uint32_t per = 1 + static_cast<std::uint32_t>(r() % 400);
    ledger l(static_cast<std::size_t>(producers) * per);
    std::atomic<long> breaks{0};
    std::vector<join_handle<void>> hs;
    {
        auto [tx, rx] = channel<std::uint64_t>(capacity);
        for (int p = 0; p < producers; ++p)
            hs.push_back(rt.spawn(ordered_producer(tx, static_cast<std::uint64_t>(p), per)));
        for (int q = 0; q < consumers; ++q)
            hs.push_back(rt.spawn(ordered_consumer(rx, per, l, breaks, producers)));
    }  // the channel closes when the producers finish
    for (auto& h : hs) h.join();
    const long want = static_cast<long>(producers) * per;
    if (l.twice.load()) return {0, say(l.twice.load(), " values were received twice")};
    if (l.delivered.load() != want)
        return {0, say(want - l.delivered.load(), " of ", want, " values were lost")};
    if (breaks.load())
        return {0, say(breaks.load(), " values overtook an earlier one of their producer")};
    return {static_cast<std::uint64_t>(want), {}};
}

task<long> await_oneshot(oneshot_receiver<payload> rx) {
    auto v = co_await rx;
    co_return v ? static_cast<long>(v->id) : -1;
}

outcome oneshot_races(runtime& rt, rng_t& r) {
    const int n = 1 + static_cast<int>(r() % 40);
    long got = 0, closed = 0, cancelled = 0, back = 0;
    for (int i = 0; i < n; ++i) {
        auto [tx, rx] = oneshot<payload>();
        const unsigned kind =
            static_cast<unsigned>(r() % 3);  // 0 send, 1 drop the sender, 2 send and abort
        auto h = rt.spawn(await_oneshot(std::move(rx)));
        std::thread other([tx = std::move(tx), kind, i, &back]() mutable {
            if (kind == 1) {
                auto gone = std::move(tx);
            } else {
                payload v(static_cast<std::uint32_t>(i));
                if (!std::move(tx).send(std::move(v)).sent()) ++back;
            }
        });
        if (kind == 2) h.abort();
        other.join();
        try {
            const long v = h.join();
            if (v == i) {
                ++got;
            } else if (v == -1 && kind == 1) {
                ++closed;
            } else {
                return {0, say("round ", i, " (kind ", kind, "): the receiver saw ", v)};
            }
        } catch (const task_cancelled&) {
            if (kind != 2) return {0, say("round ", i, ": a task nobody aborted was cancelled")};
            ++cancelled;
        }
    }
    (void)back;
    return {static_cast<std::uint64_t>(got + closed + cancelled), {}};
}

// Receives through select with a sleep (either first), timeout around recv, or a plain recv,
// until the end.
task<void> select_consumer(receiver<payload> rx, ledger& l, std::uint64_t seed) {
    rng_t r(seed);
    for (;;) {
        const unsigned mode = static_cast<unsigned>(r() % 4);
        std::optional<payload> v;
        if (mode == 0) {
            auto s = co_await select(rx.recv(), sleep(std::chrono::microseconds(r() % 300)));
            if (s.index() == 1) continue;
            v = std::move(std::get<0>(s));
        } else if (mode == 3) {
            // The sleep first: when both are ready it wins, and the receive must give back
            // whatever it had taken.
            auto s = co_await select(sleep(std::chrono::microseconds(r() % 50)), rx.recv());
            if (s.index() == 0) continue;
            v = std::move(std::get<1>(s));
        } else if (mode == 1) {
            auto t = co_await timeout(std::chrono::microseconds(r() % 500), rx.recv());
            if (t.timed_out()) continue;
            v = std::move(t.value());
        } else {
            v = co_await rx.recv();
        }
        if (!v) co_return;  // the end: every sender gone, nothing left
        l.got(v->id);
    }
}

// A send that waits a whole second ends the producer (unsent values are not counted), so a
// defect that strands values shows up as lost values rather than as a hang.
task<void> guarded_producer(sender<payload> tx, std::uint32_t first, std::uint32_t n,
                            std::atomic<long>& sent) {
    for (std::uint32_t i = 0; i < n; ++i) {
        payload v(first + i);
        auto t = co_await timeout(1s, tx.send(std::move(v)));
        if (t.timed_out()) co_return;
        if (t.value().sent()) sent.fetch_add(1);
    }
}

outcome select_aborts(runtime& rt, rng_t& r) {
    const std::uint32_t producers = 1 + static_cast<std::uint32_t>(r() % 4);
    const std::uint32_t per = 1 + static_cast<std::uint32_t>(r() % 200);
    ledger l(static_cast<std::size_t>(producers) * per);
    std::atomic<long> sent{0};
    long left = 0;
    auto [tx, rx] = channel<payload>(1 + r() % 4);
    std::vector<join_handle<void>> prods, cons;
    for (std::uint32_t p = 0; p < producers; ++p)
        prods.push_back(rt.spawn(guarded_producer(tx, p * per, per, sent)));
    {
        auto gone = std::move(tx);
    }
    const int waves = 1 + static_cast<int>(r() % 6);
    for (int w = 0; w < waves; ++w) {
        for (int k = 0; k < 2; ++k) cons.push_back(rt.spawn(select_consumer(rx, l, r())));
        std::this_thread::sleep_for(std::chrono::microseconds(50 + r() % 300));
        for (auto& h : cons)
            if (r() % 2) h.abort();
    }
    cons.push_back(rt.spawn(select_consumer(rx, l, r())));  // never aborted: drains
    for (auto& h : prods) h.join();
    for (auto& h : cons) {
        try {
            h.join();
        } catch (const task_cancelled&) {
        }
    }
    while (rx.try_recv()) ++left;
    if (l.twice.load()) return {0, say(l.twice.load(), " values were delivered twice")};
    if (sent.load() != l.delivered.load() + left)
        return {0, say(sent.load(), " sent, ", l.delivered.load(), " delivered, ", left,
                       " left: values lost")};
    if (left) return {0, say(left, " values stayed in the channel after its end was reported")};
    return {static_cast<std::uint64_t>(sent.load()), {}};
}

task<long> sleeper(std::chrono::microseconds d) {
    const auto t0 = clock_t_::now();
    co_await sleep(d);
    co_return static_cast<long>(
        std::chrono::duration_cast<std::chrono::microseconds>(clock_t_::now() - t0).count());
}

outcome timers(runtime& rt, rng_t& r) {
    const int n = 1 + static_cast<int>(r() % 64);
    std::vector<std::pair<long, join_handle<long>>> hs;
    for (int i = 0; i < n; ++i) {
        const long us = static_cast<long>(r() % 2000);
        hs.emplace_back(us, rt.spawn(sleeper(std::chrono::microseconds(us))));
    }
    for (auto& [us, h] : hs) {
        const long took = h.join();
        if (took < us) return {0, say("a sleep of ", us, " us returned after ", took, " us")};
    }
    return {static_cast<std::uint64_t>(n), {}};
}

task<std::uint64_t> blocking_from_task(std::uint64_t i) {
    co_return co_await spawn_blocking([i] { return i * i; });
}

outcome blocking_jobs(runtime& rt, rng_t& r) {
    const std::uint64_t n = 1 + r() % 64;
    std::uint64_t want = 0, got = 0;
    std::vector<blocking_handle<std::uint64_t>> plain;
    std::vector<join_handle<std::uint64_t>> tasks;
    for (std::uint64_t i = 0; i < n; ++i) {
        want += 2 * i * i;
        plain.push_back(rt.spawn_blocking([i] { return i * i; }));
        tasks.push_back(rt.spawn(blocking_from_task(i)));
    }
    for (auto& h : plain) got += h.join();
    for (auto& h : tasks) got += h.join();
    if (got != want) return {0, say("blocking jobs summed to ", got, ", expected ", want)};
    return {2 * n, {}};
}

// ---- sockets: byte streams over Unix pairs and loopback TCP ----------------------------------
// Each connection carries a deterministic byte sequence written in random pieces; its reader
// takes it through plain reads, reads raced by short timeouts and reads in tasks aborted at
// random. The oracle: every reader got exactly its connection's sequence, whole (nothing lost,
// duplicated or reordered by an abandoned read).

std::byte stream_byte(std::uint32_t conn, std::uint64_t k) {
    return static_cast<std::byte>((conn * 131u + k * 7u + k / 509u) % 253u);
}

struct stream_check {
    std::uint64_t got = 0;
    std::uint64_t first_bad = UINT64_MAX;
    void take(const std::byte* p, std::size_t n, std::uint32_t conn) {
        for (std::size_t i = 0; i < n; ++i)
            if (p[i] != stream_byte(conn, got + i) && first_bad == UINT64_MAX) first_bad = got + i;
        got += n;
    }
};

template <class Stream>
task<void> stream_writer(Stream s, std::uint32_t conn, std::uint64_t total, std::uint64_t seed) {
    rng_t r(seed);
    std::vector<std::byte> piece;
    for (std::uint64_t k = 0; k < total;) {
        const std::uint64_t n = std::min<std::uint64_t>(total - k, 1 + r() % 4096);
        piece.resize(n);
        for (std::uint64_t i = 0; i < n; ++i) piece[i] = stream_byte(conn, k + i);
        const std::span<const std::byte> bytes(piece);
        const auto w = co_await s.write_all(bytes);
        if (!w) co_return;
        k += n;
        if (r() % 4 == 0) co_await yield_now();
    }
}  // closes the stream: the reader sees its end

template <class Stream>
task<void> aborted_read(Stream& s, std::byte* buf, std::size_t want, std::size_t& got, bool& end) {
    auto n = co_await s.read(buf, want);
    if (!n || *n == 0) {
        end = true;
    } else {
        got = *n;
    }
}

template <class Stream>
task<void> stream_reader(Stream s, std::uint32_t conn, stream_check& c, std::uint64_t seed) {
    rng_t r(seed);
    std::array<std::byte, 2048> buf;
    for (;;) {
        const std::size_t want = 1 + r() % buf.size();
        const unsigned how = static_cast<unsigned>(r() % 4);
        std::size_t n = 0;
        if (how == 0) {  // raced by a timeout: a read that loses must consume nothing
            auto t =
                co_await timeout(std::chrono::microseconds(r() % 200), s.read(buf.data(), want));
            if (t.timed_out()) continue;
            auto res = std::move(t.value());
            if (!res || *res == 0) co_return;
            n = *res;
        } else if (how == 1) {  // in a task aborted at once or after a yield
            bool end = false;
            auto h = spawn(aborted_read(s, buf.data(), want, n, end));
            if (r() % 2) co_await yield_now();
            h.abort();
            try {
                co_await h;
            } catch (const task_cancelled&) {
            }
            if (end) co_return;
        } else {
            auto res = co_await s.read(buf.data(), want);
            if (!res || *res == 0) co_return;
            n = *res;
        }
        c.take(buf.data(), n, conn);
    }
}

task<outcome> sockets_round(std::uint64_t seed) {
    rng_t r(seed);
    const std::uint32_t n = 1 + static_cast<std::uint32_t>(r() % 6);
    std::vector<stream_check> checks(n);
    std::vector<std::uint64_t> totals(n);
    std::vector<join_handle<void>> hs;
    outcome out;
    std::optional<net::tcp_listener> listener;
    for (std::uint32_t c = 0; c < n; ++c) {
        totals[c] = r() % 65536;
        if (r() % 2 == 0) {
            auto p = net::unix_stream::pair();
            if (!p) {
                out.failure = say("unix_stream::pair: ", p.error().message());
                break;
            }
            hs.push_back(spawn(stream_writer(std::move(p->first), c, totals[c], r())));
            hs.push_back(spawn(stream_reader(std::move(p->second), c, checks[c], r())));
            continue;
        }
        if (!listener) {
            auto addr = net::socket_address::parse("127.0.0.1:0");
            auto l = net::tcp_listener::bind(*addr);
            if (!l) {
                out.failure = say("tcp bind: ", l.error().message());
                break;
            }
            listener.emplace(std::move(*l));
        }
        auto at = listener->local_addr();
        auto client = co_await net::tcp_stream::connect(*at);
        auto server = co_await listener->accept();
        if (!client || !server) {
            out.failure = say("loopback connection failed: ",
                              (!client ? client.error() : server.error()).message());
            break;
        }
        hs.push_back(spawn(stream_writer(std::move(*client), c, totals[c], r())));
        hs.push_back(spawn(stream_reader(std::move(*server), c, checks[c], r())));
    }
    for (auto& h : hs) co_await h;
    if (!out.failure.empty()) co_return out;
    for (std::uint32_t c = 0; c < n; ++c) {
        if (checks[c].first_bad != UINT64_MAX) {
            out.failure = say("connection ", c, ": byte ", checks[c].first_bad,
                              " differs from what was written");
            co_return out;
        }
        if (checks[c].got != totals[c]) {
            out.failure = say("connection ", c, ": ", checks[c].got, " bytes read of ", totals[c],
                              " written");
            co_return out;
        }
        out.ops += totals[c];
    }
    co_return out;
}

outcome sockets(runtime& rt, rng_t& r) { return rt.block_on(sockets_round(r())); }

// --seed-leak: a task that can never be woken (its channel's only sender is in its own frame).
task<void> leaked_task() {
    auto [tx, rx] = channel<int>(1);
    (void)co_await rx.recv();
}

struct workload {
    const char* name;
    outcome (*fn)(runtime&, rng_t&);
};

constexpr workload all_workloads[] = {
    {"spawn_tree", spawn_tree},
    {"spawn_chain", spawn_chain},
    {"yields", yields},
    {"mutex_counter", mutex_counter},
    {"semaphore_aborts", semaphore_aborts},
    {"channel_mpmc", channel_mpmc},
    {"oneshot_races", oneshot_races},
    {"select_aborts", select_aborts},
    {"timers", timers},
    {"blocking_jobs", blocking_jobs},
    {"sockets", sockets},
};

// Ends the process with the hang status when one round takes longer than `limit`: a stress
// run that hangs must say which workload, not wait for an outer timeout.
class watchdog {
public:
    explicit watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { loop(); }) {}
    ~watchdog() {
        {
            std::lock_guard l(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void round(std::string what) {
        std::lock_guard l(mu_);
        what_ = std::move(what);
        since_ = clock_t_::now();
    }

private:
    void loop() {
        std::unique_lock l(mu_);
        while (!stop_) {
            cv_.wait_for(l, 1s);
            if (!what_.empty() && clock_t_::now() - since_ > limit_) {
                std::fprintf(stderr, "stress: %s has run for more than %lld s: a hang\n",
                             what_.c_str(), static_cast<long long>(limit_.count()));
                std::fflush(stderr);
                _exit(3);
            }
        }
    }
    std::chrono::seconds limit_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::string what_;
    clock_t_::time_point since_{};
    std::thread thread_;
};

}  // namespace

std::vector<std::string> fault_names() {
    return {"timers_fire_early: timers fire a tick early (the timers workload sees it)",
            "select_completes_losers: a select's losing receive takes its value and drops it "
            "(select_aborts sees a value lost)",
            "io_drop_orphan_data: a read abandoned while it waits reads once more and drops the "
            "bytes (sockets sees a stream with bytes missing)"};
}

bool set_fault(testing::runtime_faults& f, const std::string& name) {
    if (name == "timers_fire_early") {
        f.timers_fire_early = true;
    } else if (name == "select_completes_losers") {
        f.select_completes_losers = true;
    } else if (name == "io_drop_orphan_data") {
        f.io_drop_orphan_data = true;
    } else {
        return false;
    }
    return true;
}

std::vector<std::string> workload_names() {
    std::vector<std::string> v;
    for (const workload& w : all_workloads) v.emplace_back(w.name);
    return v;
}

result run(const options& o) {
    result res;
    res.seed = o.seed;
    std::vector<const workload*> chosen;
    for (const workload& w : all_workloads)
        if (o.only.empty() || std::string(w.name).find(o.only) != std::string::npos)
            chosen.push_back(&w);
    auto add_row = [&](std::string name) {
        row x;
        x.name = std::move(name);
        res.rows.push_back(std::move(x));
    };
    for (const workload* w : chosen) add_row(w->name);
    // The runtimes' shutdowns: every payload destroyed exactly once once a runtime is gone.
    add_row("shutdown");
    const std::size_t shutdown_row = res.rows.size() - 1;
    // The inspector's row (--inspect): dumps taken, and false lost-task reports.
    if (o.inspect) add_row("inspect");
    const std::size_t inspect_row = res.rows.size() - 1;
    if (chosen.empty() || o.workers.empty()) return res;

    rng_t r(o.seed);
    watchdog dog(120s);
    const auto t0 = clock_t_::now();
    auto elapsed = [&] { return std::chrono::duration<double>(clock_t_::now() - t0).count(); };
    double next_progress = o.progress_every;
    bool failed = false;
    while (!failed) {
        if (o.rounds ? res.rounds >= o.rounds : elapsed() >= o.seconds) break;
        config c;
        c.workers = o.workers[r() % o.workers.size()];
        c.debug = o.faults;
        if (o.io_mode == io_mode_kind::busy) {
            c.io_mode = io_mode_kind::busy;
            c.topology.policy = placement_policy::compact;
        }
        const long live_before = payload::live.load();
        {
            runtime rt(c);
            ++res.runtimes;
            // --inspect: dumps and lost-task questions while the rounds run, stopped before the
            // shutdown. Its findings are merged after the runtime's rounds.
            std::atomic<bool> inspecting{o.inspect};
            std::uint64_t inspections = 0;
            std::string false_report;
            std::thread inspector;
            join_handle<void> leak;
            if (o.seed_leak) leak = rt.spawn(leaked_task());
            if (o.inspect) {
                inspector = std::thread([&] {
                    while (inspecting.load() && false_report.empty()) {
                        (void)rt.dump();
                        const lost_report l = rt.find_lost();
                        inspections += 1;
                        if (!l.lost.empty()) false_report = l.to_string();
                    }
                });
            }
            for (unsigned k = 0; k < o.rounds_per_runtime && !failed; ++k) {
                if (o.rounds ? res.rounds >= o.rounds : elapsed() >= o.seconds) break;
                const std::size_t i = r() % chosen.size();
                rng_t round_rng(r());
                row& rw = res.rows[i];
                dog.round(
                    say("round ", res.rounds, " (", chosen[i]->name, ", ", c.workers, " workers)"));
                const auto s0 = clock_t_::now();
                outcome out = chosen[i]->fn(rt, round_rng);
                rw.seconds += std::chrono::duration<double>(clock_t_::now() - s0).count();
                ++rw.rounds;
                rw.ops += out.ops;
                if (!out.failure.empty()) {
                    ++rw.failures;
                    failed = true;
                    rw.first_failure =
                        say("round ", res.rounds, " on ", c.workers, " workers: ", out.failure,
                            " (replay: blitz stress --seed ", o.seed, " --rounds ", res.rounds + 1,
                            ")");
                }
                ++res.rounds;
                if (o.progress && elapsed() >= next_progress) {
                    next_progress += o.progress_every;
                    std::uint64_t ops = 0;
                    for (const row& x : res.rows) ops += x.ops;
                    o.progress(say("stress: ", static_cast<long>(elapsed()), " s: ", res.rounds,
                                   " rounds on ", res.runtimes, " runtimes, ", ops,
                                   " checked operations, ", failed ? "a failure" : "no failure"));
                }
            }
            if (inspector.joinable()) {
                inspecting.store(false);
                inspector.join();
                row& ins = res.rows[inspect_row];
                ins.rounds += 1;
                ins.ops += inspections;
                if (!false_report.empty() && !failed) {
                    ++ins.failures;
                    failed = true;
                    ins.first_failure = say("runtime ", res.runtimes, " (", c.workers,
                                            " workers): a lost task reported in a workload that "
                                            "leaks nothing:\n",
                                            false_report);
                }
            }
            if (leak.valid()) leak.abort();
            dog.round(say("the shutdown of a runtime with ", c.workers, " workers"));
            rt.shutdown();
        }
        dog.round({});
        row& down = res.rows[shutdown_row];
        ++down.rounds;
        if (!failed && payload::live.load() != live_before) {
            row& rw = down;
            ++rw.failures;
            failed = true;
            rw.first_failure = say("after the shutdown of runtime ", res.runtimes, ": ",
                                   payload::live.load() - live_before,
                                   " payloads were never destroyed (or destroyed twice)");
        }
    }
    res.seconds = elapsed();
    return res;
}

}  // namespace blitz::stress_mix
