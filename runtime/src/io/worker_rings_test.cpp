// SPDX-License-Identifier: MIT
// Busy mode's per-worker rings (config io_worker_rings, issue 20): owned operations run on the
// ring of the worker that started them; a cancel from another worker goes to the owner's mailbox
// and no byte is lost; a worker with operations in flight on its ring keeps spinning past
// busy_poll_spin (only it can reap them); epoll has no worker rings. Shared mode on io_uring
// (issue 44): stream reads run on the ring, and a worker parked in its ring is woken there.

#include "io/worker_rings.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/io_backends.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/workloads.hpp"
#include "io/epoll_backend.hpp"
#include "io/io_driver.hpp"
#include "io/op_state.hpp"
#include "io/ring_mailbox.hpp"
#include "io/uring_backend.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

config busy(io_backend_kind b, unsigned workers) {
    config c;
    c.workers = workers;
    c.topology.policy = placement_policy::compact;  // worker i on the i-th CPU
    c.io_mode = io_mode_kind::busy;
    c.io_backend = b;
    c.park_timeout = std::chrono::hours(1);
    return c;
}

bool has_worker_rings(const runtime_metrics& m) {
    return m.io_rings.find("a ring per worker") != std::string::npos;
}

class WorkerRings : public ::testing::TestWithParam<io_backend_kind> {};

TEST_P(WorkerRings, OwnedOperationsRunOnTheStartingWorkersRing) {
    runtime rt(busy(GetParam(), 2));
    const runtime_metrics m0 = rt.metrics();
    // Rings exactly when the backend is io_uring (automatic selection may fall back to epoll).
    EXPECT_EQ(has_worker_rings(m0), m0.io_backend == "io_uring") << m0.io_rings;
    const std::size_t got = rt.block_on([]() -> task<std::size_t> {
        auto p = net::unix_stream::pair();
        EXPECT_TRUE(p.ok());
        std::size_t total = 0;
        for (int i = 0; i < 200; ++i) {
            owned_buffer out(8);
            out.resize(8);
            auto w = co_await p->first.write_owned(std::move(out));
            EXPECT_TRUE(w.result.ok());
            owned_buffer into(16);
            auto r = co_await p->second.read_owned(std::move(into));
            if (r.result.ok()) total += *r.result;
        }
        co_return total;
    }());
    EXPECT_EQ(got, 1600u);
    const runtime_metrics m = workloads::settle(rt);
    if (has_worker_rings(m0)) {
        EXPECT_EQ(m.io_worker_ring_ops, 400u);  // every one started on a worker: its own ring
        EXPECT_GT(m.io_worker_ring_enters, 0u);
    } else {
        EXPECT_EQ(m.io_worker_ring_ops, 0u);
    }
    EXPECT_EQ(m.io_stale_completions, 0u);
    EXPECT_EQ(m.io_ops_in_flight, 0u);
}

// A reader's owned read is in flight on its worker's ring; a task on the other worker aborts
// it, so the reader's frame is destroyed there and the read's cancel must be handed to the
// ring's owner. Bytes written afterwards reach the next read exactly (none lost, none twice).
TEST_P(WorkerRings, ACancelFromAnotherWorkerGoesToTheOwnersMailbox) {
    if (std::thread::hardware_concurrency() < 2) {
        GTEST_SKIP() << "one CPU: two pinned busy workers need two";
    }
    runtime rt(busy(GetParam(), 2));
    const bool rings = has_worker_rings(rt.metrics());
    auto pair = rt.block_on([]() -> task<std::pair<net::unix_stream, net::unix_stream>> {
        auto p = net::unix_stream::pair();
        EXPECT_TRUE(p.ok());
        co_return std::move(*p);
    }());
    net::unix_stream& x = pair.first;
    net::unix_stream& y = pair.second;
    constexpr int rounds = 20;
    std::string read_back;
    for (int round = 0; round < rounds; ++round) {
        std::atomic<int> reader_cpu{-1};
        auto reader = rt.spawn([](net::unix_stream& s, std::atomic<int>& cpu) -> task<void> {
            cpu = sched_getcpu();
            owned_buffer into(64);
            (void)co_await s.read_owned(std::move(into));  // no bytes come: it is aborted
            ADD_FAILURE() << "the read completed";
        }(y, reader_cpu));
        while (reader_cpu.load() < 0) std::this_thread::yield();
        // An aborter that runs on the other worker (a spawn from this thread lands on either;
        // one on the reader's CPU gives up and we spawn again).
        for (;;) {
            auto aborter = rt.spawn([](join_handle<void>& r, int cpu) -> task<bool> {
                if (sched_getcpu() == cpu) co_return false;
                r.abort();
                co_return true;
            }(reader, reader_cpu.load()));
            if (aborter.join()) break;
        }
        EXPECT_THROW(reader.join(), task_cancelled);
        // The abandoned read is cancelled in the kernel (no bytes come to end it otherwise):
        // its final completion arrives and its state goes back to the slab. A cancel lost on
        // the way to the owner stalls here (the ctest timeout reports it).
        while (rt.metrics().io_ops_in_flight != 0) std::this_thread::yield();
        // The next owned read gets exactly what is written now.
        const std::string msg = "round-" + std::to_string(round) + ";";
        const std::string got = rt.block_on(
            [](net::unix_stream& w, net::unix_stream& r, std::string m) -> task<std::string> {
                auto sent = co_await w.write_all(workloads::bytes_of(m));
                EXPECT_TRUE(sent.ok());
                std::string out;
                while (out.size() < m.size()) {
                    owned_buffer into(64);
                    auto got = co_await r.read_owned(std::move(into));
                    if (!got.result.ok() || *got.result == 0) break;
                    out.append(reinterpret_cast<const char*>(got.buffer.data()), *got.result);
                }
                co_return out;
            }(x, y, msg));
        EXPECT_EQ(got, msg);
        read_back += got;
    }
    const runtime_metrics m = workloads::settle(rt);
    if (rings) {
        // Most rounds (the aborted task usually runs where it was woken, on the aborter's
        // worker; a spinning owner may still take it first, and then cancels it itself).
        EXPECT_GT(m.io_worker_ring_handed_cancels, 0u);
    } else {
        EXPECT_EQ(m.io_worker_ring_handed_cancels, 0u);
    }
    EXPECT_EQ(m.io_stale_completions, 0u);
}

// busy_poll_spin runs out while an owned read is in flight on the worker's ring: the worker
// keeps spinning (with DEFER_TASKRUN only it can reap the completion), and the read completes
// when the bytes come; with nothing in flight it parks as usual.
TEST_P(WorkerRings, AWorkerWithOperationsInFlightKeepsSpinning) {
    config c = busy(GetParam(), 1);
    c.busy_poll_spin = 200us;
    runtime rt(c);
    const bool rings = has_worker_rings(rt.metrics());
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    std::atomic<bool> started{false};
    auto h = rt.spawn([](int fd, std::atomic<bool>& started) -> task<std::size_t> {
        net::unix_stream s(fd);
        owned_buffer into(16);
        started = true;
        auto r = co_await s.read_owned(std::move(into));
        co_return r.result.ok() ? *r.result : 0;
    }(sv[0], started));
    while (!started) std::this_thread::yield();
    // The worker may have parked before the spawn (its 200 us ran out while this thread was
    // still starting the task); from the read on it must not.
    const std::uint64_t parks = rt.metrics().total(&worker_metrics::parks);
    if (rings) {
        // Far past the 200 us spin (a worker that parked would stop looking, and the wait
        // would stall: the ctest timeout reports it).
        const std::uint64_t looks = rt.metrics().total(&worker_metrics::busy_polls);
        while (rt.metrics().total(&worker_metrics::busy_polls) < looks + 1000) {
            std::this_thread::sleep_for(1ms);
        }
        EXPECT_EQ(rt.metrics().total(&worker_metrics::parks), parks);
    }
    ASSERT_EQ(write(sv[1], "hello", 5), 5);
    EXPECT_EQ(h.join(), 5u);
    while (rt.metrics().num_parked == 0) std::this_thread::sleep_for(1ms);  // then it parks
    close(sv[1]);
}

// Pooled reads in busy mode draw from the reading worker's own provided-buffer ring: a numbered
// stream read through a small pool (8 x 64 B per ring, so it runs dry and re-arms) is exact, and
// every buffer is back in its pool afterwards. The 2,000 messages (about 9 KB) go out in one
// write_all, so they arrive at once and fill the pool whatever the workers' timing.
TEST_P(WorkerRings, PooledReadsUseTheWorkersOwnBufferRing) {
    config c = busy(GetParam(), 2);
    c.io_pool_buffers = 8;
    c.io_pool_buffer_size = 64;
    runtime rt(c);
    const bool rings = has_worker_rings(rt.metrics());
    const std::string got = rt.block_on([]() -> task<std::string> {
        auto p = net::unix_stream::pair();
        EXPECT_TRUE(p.ok());
        auto writer = spawn([](net::unix_stream w) -> task<void> {
            std::string all;
            for (int i = 0; i < 2000; ++i) all += std::to_string(i) + ";";
            EXPECT_TRUE((co_await w.write_all(workloads::bytes_of(all))).ok());
        }(std::move(p->first)));
        std::string all;
        for (;;) {
            auto r = co_await p->second.read_pooled();
            if (!r || r->empty()) break;
            all.append(reinterpret_cast<const char*>(r->bytes().data()), r->bytes().size());
        }
        co_await writer;
        co_return all;
    }());
    std::string want;
    for (int i = 0; i < 2000; ++i) want += std::to_string(i) + ";";
    EXPECT_EQ(got, want);
    const runtime_metrics m = workloads::settle(rt);
    EXPECT_EQ(m.io_pool_out, 0u);
    if (rings) {
        EXPECT_EQ(m.io_pool_buffers, 8u * 3) << "the shared ring's pool and one per worker";
        EXPECT_GT(m.io_worker_ring_ops, 0u);
        EXPECT_GT(m.io_pool_enobufs, 0u) << "8 buffers: the pools ran dry and were re-armed";
    }
}

INSTANTIATE_TEST_SUITE_P(Io, WorkerRings, workloads::io_backends(), workloads::io_backend_name);

// Shared mode on io_uring (issue 44): a stream's read into a span arms one multishot receive
// on the reading worker's ring, and the worker, parked with that receive in flight, sleeps in
// its ring; a spawn from a plain thread must reach it there (the unpark goes to the ring's
// eventfd). The park timeout is an hour: a lost wake shows as the guard below running out.
class WorkerRingsParked : public ::testing::TestWithParam<io_backend_kind> {};

TEST_P(WorkerRingsParked, StreamReadsRunOnTheRingAndAParkedWorkerIsWokenThere) {
    config c;
    c.workers = 1;
    c.io_backend = GetParam();
    c.park_timeout = std::chrono::hours(1);
    runtime rt(c);
    const bool rings = has_worker_rings(rt.metrics());
    auto p = rt.block_on([]() -> task<io_result<std::pair<net::unix_stream, net::unix_stream>>> {
        co_return net::unix_stream::pair();
    }());
    ASSERT_TRUE(p.ok());
    std::atomic<std::size_t> got{0};
    auto reader = rt.spawn([](net::unix_stream s, std::atomic<std::size_t>& got) -> task<void> {
        std::array<std::byte, 64> buf;
        for (;;) {
            auto n = co_await s.read(buf);
            if (!n || *n == 0) co_return;
            got.fetch_add(*n);
        }
    }(std::move(p->second), got));
    const int wfd = p->first.native_handle();
    for (int i = 0; i < 50; ++i) {
        ASSERT_EQ(::write(wfd, "0123456789", 10), 10);
        while (got.load() < 10u * static_cast<unsigned>(i + 1)) std::this_thread::yield();
    }
    // The worker parks with the reader's receive in flight.
    while (rt.metrics().num_parked != 1) std::this_thread::sleep_for(1ms);
    const runtime_metrics before = rt.metrics();
    std::promise<void> ran;
    rt.spawn([](std::promise<void>& ran) -> task<void> {
          ran.set_value();
          co_return;
      }(ran))
        .detach();
    ASSERT_EQ(ran.get_future().wait_for(60s), std::future_status::ready)
        << "a spawn never reached the worker parked in its ring";
    const runtime_metrics m = rt.metrics();
    if (rings) {
        EXPECT_GT(m.io_pool_arms, 0u) << "the stream read armed a multishot receive";
        EXPECT_GT(m.io_pool_chunks, 0u);
        EXPECT_GT(m.io_worker_ring_wakes, before.io_worker_ring_wakes)
            << "the unpark went through the ring's eventfd";
    } else {
        EXPECT_EQ(m.io_pool_arms, 0u);
    }
    rt.block_on([](net::unix_stream w) -> task<void> {
        w.close();
        co_return;
    }(std::move(p->first)));
    reader.join();
    EXPECT_EQ(got.load(), 500u);
}

// Shared mode with io_batched_sends (issue 44, O15): a worker's write_all goes out as SEND
// operations staged on its own ring, and the sends of one tick share one io_uring_enter. 64 tasks
// on one worker each write 20 numbered 64-byte messages to their own stream; every stream reads
// back exact, every message was a ring operation, and the submitting enters are a small fraction of
// the sends (each task waits for its send, so a tick stages one send per task: about one enter per
// round of 64). On epoll the same writes are readiness-based and exact.
class WorkerRingsSends : public ::testing::TestWithParam<io_backend_kind> {};

TEST_P(WorkerRingsSends, WriteAllIsStagedOnTheOwnRingAndATicksSendsShareOneEnter) {
    constexpr int streams = 64, messages = 20;
    config c;
    c.workers = 1;
    c.io_backend = GetParam();
    c.io_batched_sends = true;
    runtime rt(c);
    const bool rings = has_worker_rings(rt.metrics());
    using pair = std::pair<net::unix_stream, net::unix_stream>;
    std::vector<pair> pairs = rt.block_on([]() -> task<std::vector<pair>> {
        std::vector<pair> v;
        for (int i = 0; i < streams; ++i) {
            auto p = net::unix_stream::pair();
            EXPECT_TRUE(p.ok());
            if (p) v.push_back(std::move(*p));
        }
        co_return v;
    }());
    ASSERT_EQ(pairs.size(), static_cast<std::size_t>(streams));
    auto message = [](int stream, int k) {
        std::string m = std::to_string(stream) + ":" + std::to_string(k) + ";";
        m.resize(64, '.');
        return m;
    };
    const runtime_metrics before = rt.metrics();
    // Spawned from a task on the worker, the writers are all queued before the first one runs.
    rt.block_on([](std::vector<pair>& pairs, decltype(message) message) -> task<void> {
        std::vector<join_handle<void>> writers;
        for (int i = 0; i < streams; ++i) {
            writers.push_back(
                spawn([](net::unix_stream& w, int i, decltype(message) message) -> task<void> {
                    for (int k = 0; k < messages; ++k) {
                        const std::string m = message(i, k);
                        EXPECT_TRUE((co_await w.write_all(workloads::bytes_of(m))).ok());
                    }
                }(pairs[static_cast<std::size_t>(i)].first, i, message)));
        }
        for (auto& h : writers) co_await h;
    }(pairs, message));
    const runtime_metrics after = rt.metrics();
    // Every message waits in its socket (1,280 bytes a stream): read them back exact.
    for (int i = 0; i < streams; ++i) {
        std::string want;
        for (int k = 0; k < messages; ++k) want += message(i, k);
        std::string got(want.size(), '\0');
        const int fd = pairs[static_cast<std::size_t>(i)].second.native_handle();
        std::size_t have = 0;
        while (have < got.size()) {
            const ssize_t n = ::read(fd, got.data() + have, got.size() - have);
            ASSERT_GT(n, 0);
            have += static_cast<std::size_t>(n);
        }
        EXPECT_EQ(got, want) << "stream " << i;
    }
    const std::uint64_t sends = std::uint64_t{streams} * messages;
    if (rings) {
        EXPECT_GE(after.io_worker_ring_ops - before.io_worker_ring_ops, sends)
            << "every write_all went out as a send on the worker's ring";
        const std::uint64_t enters = after.io_worker_ring_submits - before.io_worker_ring_submits;
        EXPECT_LE(enters, sends / 16) << "a tick's sends share one io_uring_enter";
        std::printf("%llu sends, %llu submitting enters\n", static_cast<unsigned long long>(sends),
                    static_cast<unsigned long long>(enters));
    } else {
        EXPECT_EQ(after.io_worker_ring_ops, before.io_worker_ring_ops);
    }
    rt.block_on([](std::vector<pair> v) -> task<void> {
        v.clear();
        co_return;
    }(std::move(pairs)));
}

INSTANTIATE_TEST_SUITE_P(Io, WorkerRingsSends, workloads::io_backends(),
                         workloads::io_backend_name);

int ring_test_open_fds() {
    int n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// A listener's multishot accept (issue 44) pauses once io_pool_queue connections wait in the
// listener's queue (the kernel's backlog holds the rest), an accept on a drained queue arms it
// again and nothing is lost, and closing the listener closes what nobody took: the process's
// descriptors return to their count. Blocking clients on this plain thread; the verdicts are
// descriptor and operation counts.
TEST_P(WorkerRingsParked, AMultishotAcceptPausesLosesNothingAndClosesWhatNobodyTook) {
    config c;
    c.workers = 1;
    c.io_backend = GetParam();
    c.io_pool_queue = 4;
    runtime rt(c);
    const bool rings = has_worker_rings(rt.metrics());
    const int before = ring_test_open_fds();
    auto l = rt.block_on([]() -> task<io_result<net::tcp_listener>> {
        co_return net::tcp_listener::bind(*net::socket_address::parse("127.0.0.1:0"));
    }());
    ASSERT_TRUE(l.ok());
    const net::socket_address where = *l->local_addr();
    std::vector<int> clients;
    auto connect_one = [&] {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT_EQ(::connect(fd, where.data(), where.size()), 0);
        clients.push_back(fd);
    };
    auto accept_n = [&](int n) {
        return rt.block_on([](net::tcp_listener& l, int n) -> task<int> {
            int got = 0;
            for (int i = 0; i < n; ++i) {
                auto s = co_await l.accept();
                if (s) ++got;
            }
            co_return got;
        }(*l, n));
    };
    connect_one();
    ASSERT_EQ(accept_n(1), 1);  // arms the multishot accept (on io_uring)
    for (int i = 0; i < 20; ++i) connect_one();
    const int fixed = before + 1 + static_cast<int>(clients.size());  // the listener, clients
    if (rings) {
        // Paused: no operation in flight while the listener stays open and clients wait.
        EXPECT_EQ(workloads::settle_ops(rt).io_ops_in_flight, 0u);
        EXPECT_GE(ring_test_open_fds() - fixed, 4) << "connections wait in the listener's queue";
    }
    // Every connection is accepted exactly once: the queue first, then the backlog again. How
    // many the queue holds after a partial drain depends on how many completions arrived before
    // each pause took effect, so the counts asserted are the accepts: all 26 waiting, no more.
    EXPECT_EQ(accept_n(12), 12);
    for (int i = 0; i < 6; ++i) connect_one();
    if (rings) EXPECT_EQ(workloads::settle_ops(rt).io_ops_in_flight, 0u);
    EXPECT_EQ(accept_n(14), 14);
    // The queue and the backlog are empty now. One accept re-arms the multishot accept, which
    // takes the next connections until io_pool_queue wait again; at least 3 are left to close.
    for (int i = 0; i < 6; ++i) connect_one();
    EXPECT_EQ(accept_n(1), 1);
    if (rings) {
        EXPECT_EQ(workloads::settle_ops(rt).io_ops_in_flight, 0u);
        EXPECT_GE(ring_test_open_fds() - (before + 1 + static_cast<int>(clients.size())), 3)
            << "connections wait in the listener's queue";
    }
    rt.block_on([](net::tcp_listener l) -> task<void> {
        l.close();
        co_return;
    }(std::move(*l)));
    const int want = before + static_cast<int>(clients.size());
    for (int i = 0; i < 5000 && ring_test_open_fds() != want; ++i) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(ring_test_open_fds(), want) << "the listener's queued connections closed with it";
    for (const int fd : clients) ::close(fd);
    EXPECT_EQ(workloads::settle_ops(rt).io_ops_in_flight, 0u);
}

INSTANTIATE_TEST_SUITE_P(Io, WorkerRingsParked, workloads::io_backends(),
                         workloads::io_backend_name);

TEST(WorkerRingsShared, SharedModeHasNone) {
    config c;
    c.workers = 2;
    runtime rt(c);
    EXPECT_FALSE(has_worker_rings(rt.metrics())) << rt.metrics().io_rings;
}

TEST(WorkerRingsShared, TurnedOffByConfig) {
    config c = busy(io_backend_kind::automatic, 1);
    c.io_worker_rings = false;
    runtime rt(c);
    EXPECT_FALSE(has_worker_rings(rt.metrics())) << rt.metrics().io_rings;
}

}  // namespace
}  // namespace blitz

// The class below the driver (io/worker_rings.hpp): no rings over epoll; a cancel another thread
// asks for goes through the owner's mailbox, wakes the owner asleep in its ring, and ends the
// operation there.
namespace blitz::detail {
namespace {

struct count_completions final : io_event_sink {
    void ready(scheduled_io*, std::uint32_t) noexcept override {}
    void released(scheduled_io*) noexcept override {}
    void completed(io_op_state* op, int res) noexcept override {
        last = op;
        result = res;
        done.store(true, std::memory_order_release);
    }
    void multishot(io_op_state*, int, int, bool) noexcept override {}
    io_op_state* last = nullptr;
    int result = 0;
    std::atomic<bool> done{false};
};

// ring_mailbox: entries come out once, in posting order, and an empty mailbox says so (the
// owner's look at every tick takes no lock then).
TEST(RingMailbox, TakesEveryPostOnceInOrder) {
    detail::ring_mailbox box;
    std::vector<std::uint64_t> out{99};
    EXPECT_FALSE(box.take(out));
    EXPECT_TRUE(out.empty()) << "a take drops what the last one gave";
    box.post(1);
    box.post(2);
    ASSERT_TRUE(box.take(out));
    EXPECT_EQ(out, (std::vector<std::uint64_t>{1, 2}));
    EXPECT_FALSE(box.take(out));
    EXPECT_TRUE(out.empty());
    box.post(3);
    ASSERT_TRUE(box.take(out));
    EXPECT_EQ(out, (std::vector<std::uint64_t>{3}));
}

// Many posters against an owner that keeps taking: every entry arrives exactly once (run under
// TSan by the tsan preset; the interleavings are the model's, ring_mailbox_model.cpp).
TEST(RingMailbox, ConcurrentPostersLoseNothing) {
    detail::ring_mailbox box;
    constexpr int posters = 4, each = 5000;
    std::atomic<int> done{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < posters; ++t) {
        ts.emplace_back([&box, &done, t] {
            for (int i = 0; i < each; ++i) box.post(std::uint64_t(t) * each + std::uint64_t(i));
            done.fetch_add(1);
        });
    }
    std::vector<int> seen(posters * each, 0);
    std::vector<std::uint64_t> out;
    for (;;) {
        const bool last = done.load() == posters;  // read before the take: nothing after it
        if (box.take(out)) {
            for (const std::uint64_t v : out) ++seen[v];
        }
        if (last) break;
        std::this_thread::yield();
    }
    for (auto& t : ts) t.join();
    for (int i = 0; i < posters * each; ++i) ASSERT_EQ(seen[i], 1) << "entry " << i;
}

TEST(WorkerRingsClass, NoneOverEpoll) {
    epoll_backend e(64);
    worker_rings w;
    w.create(e, 2, 64, 0, 0);
    EXPECT_EQ(w.count(), 0u);
    EXPECT_TRUE(w.text().empty());
    unsigned i = 0;
    EXPECT_EQ(w.own(i), nullptr);
}

TEST(WorkerRingsClass, AMailboxCancelWakesTheOwnerAndEndsItsOperation) {
    uring_probe_result why;
    auto shared = uring_backend::create(64, 0, 0, 0, -1, false, why);
    if (!shared) GTEST_SKIP() << "io_uring: " << why.what;
    worker_rings w;
    w.create(*shared, 1, 64, 0, 0);
    ASSERT_EQ(w.count(), 1u) << w.text();
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    io_op_state op;
    op.kind = io_op_kind::recv;
    op.fd = sv[0];
    op.buf = owned_buffer(64);
    std::promise<void> submitted;
    count_completions sink;
    unsigned parks = 0;
    std::thread t([&] {
        ASSERT_TRUE(w.attach(0));
        unsigned i = 9;
        ASSERT_NE(w.own(i), nullptr);
        EXPECT_EQ(i, 0u);
        EXPECT_FALSE(w.own_busy());
        ASSERT_TRUE(w.submit(&op));
        EXPECT_EQ(op.ring, 0);
        EXPECT_TRUE(w.own_busy());
        submitted.set_value();
        // Nobody writes: only the handed cancel can end the receive. A lost wake sleeps out
        // each park's 10 s; three of them end the test (failed) instead of hanging it.
        while (!sink.done.load(std::memory_order_acquire) && parks < 3) {
            bool fired = true;
            (void)w.park_own(0, std::chrono::seconds(10), -1, sink, fired);
            EXPECT_FALSE(fired);
            ++parks;
        }
        if (!sink.done.load(std::memory_order_acquire)) {  // give the test its verdict
            w.cancel(&op);                                 // from the owner: on its ring at once
            while (!sink.done.load(std::memory_order_acquire)) {
                bool fired = false;
                (void)w.park_own(0, std::chrono::seconds(10), -1, sink, fired);
            }
        }
        w.detach();
    });
    submitted.get_future().wait();
    unsigned i = 0;
    EXPECT_EQ(w.own(i), nullptr) << "the ring is the worker's, not this thread's";
    w.cancel(&op);  // not the owner: through the mailbox
    t.join();
    EXPECT_LT(parks, 3u) << "the handed cancel never reached the ring";
    EXPECT_EQ(sink.last, &op);
    EXPECT_EQ(sink.result, -ECANCELED);
    EXPECT_EQ(w.in_flight(0), 0u);
    io_driver_stats st;
    w.add_stats(st);
    EXPECT_EQ(st.worker_ring_ops, 1u);
    EXPECT_EQ(st.worker_ring_handed_cancels, 1u);
    EXPECT_GE(st.worker_ring_wakes, 1u) << "the handed cancel woke the owner through its ring";
    ::close(sv[0]);
    ::close(sv[1]);
}

}  // namespace
}  // namespace blitz::detail
