// SPDX-License-Identifier: MIT
// The bounded channel under stress (X5), also under ThreadSanitizer: producers and consumers on
// all workers with tiny and larger capacities, so most sends wait. Every value arrives exactly
// once, each consumer sees each producer's values in order, and closing drains everything.
// The lock-free oneshot under races of its four events (send, sender drop, receiver drop,
// receiver abort while waiting): value xor closed, and every value is destroyed exactly once.
// oneshot_cell, whose state lives in the receiving object: the cell destroyed (an aborted task)
// under a sender that moves and sends on another thread.
// The watch channel's lock-free value and lock-free send: concurrent senders and receivers on
// every worker; every value read is whole, versions never go back, every receiver ends on the
// last value.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

struct mpmc_case {
    unsigned workers;
    std::size_t capacity;
    int producers, consumers;
};

class ChannelStress : public ::testing::TestWithParam<mpmc_case> {};

void PrintTo(const mpmc_case& c, std::ostream* os) {
    *os << c.workers << " workers, capacity " << c.capacity << ", " << c.producers << "x"
        << c.consumers;
}

TEST_P(ChannelStress, ExactlyOnceAndPerProducerOrder) {
    const mpmc_case k = GetParam();
    config c;
    c.workers = k.workers;
    runtime rt(c);
    const std::uint32_t per = static_cast<std::uint32_t>(2000 * stress::scale());
    std::vector<std::atomic<std::uint8_t>> seen(static_cast<std::size_t>(k.producers) * per);
    std::atomic<long> order_breaks{0}, sent_ok{0};
    std::vector<join_handle<void>> hs;
    {
        auto [tx, rx] = channel<std::uint64_t>(k.capacity);
        for (int p = 0; p < k.producers; ++p) {
            hs.push_back(rt.spawn([](sender<std::uint64_t> tx, std::uint64_t p, std::uint32_t n,
                                     std::atomic<long>& ok) -> task<void> {
                for (std::uint32_t i = 0; i < n; ++i) {
                    if ((co_await tx.send((p << 32) | i)).sent()) ok.fetch_add(1);
                    if (i % 64 == 0) co_await yield_now();
                }
            }(tx, static_cast<std::uint64_t>(p), per, sent_ok)));
        }
        for (int q = 0; q < k.consumers; ++q) {
            hs.push_back(rt.spawn([](receiver<std::uint64_t> rx, int producers, std::uint32_t per,
                                     std::vector<std::atomic<std::uint8_t>>& seen,
                                     std::atomic<long>& breaks) -> task<void> {
                std::vector<std::int64_t> last(static_cast<std::size_t>(producers), -1);
                while (auto v = co_await rx.recv()) {
                    const auto p = static_cast<std::size_t>(*v >> 32);
                    const auto i = static_cast<std::int64_t>(*v & 0xffffffffu);
                    if (i <= last[p]) breaks.fetch_add(1);
                    last[p] = i;
                    seen[p * per + static_cast<std::size_t>(i)].fetch_add(1);
                }
            }(rx, k.producers, per, seen, order_breaks)));
        }
    }  // our handles go: the channel closes when the producers finish
    for (auto& h : hs) h.join();
    EXPECT_EQ(sent_ok.load(), static_cast<long>(k.producers) * per);
    EXPECT_EQ(order_breaks.load(), 0);
    std::size_t missing = 0, twice = 0;
    for (auto& s : seen) {
        const auto n = s.load();
        missing += n == 0;
        twice += n > 1;
    }
    EXPECT_EQ(missing, 0u);
    EXPECT_EQ(twice, 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChannelStress,
                         ::testing::Values(mpmc_case{1, 1, 3, 2}, mpmc_case{2, 1, 4, 4},
                                           mpmc_case{4, 4, 8, 3}, mpmc_case{8, 64, 6, 6},
                                           mpmc_case{4, 2, 1, 8}, mpmc_case{16, 3, 12, 12}));

// A payload that counts its live instances, so a value lost or destroyed twice shows up.
struct counted {
    static inline std::atomic<long> live{0};
    int v = 0;
    explicit counted(int x) : v(x) { live.fetch_add(1, std::memory_order_relaxed); }
    counted(counted&& o) noexcept : v(o.v) { live.fetch_add(1, std::memory_order_relaxed); }
    counted& operator=(counted&&) = delete;
    ~counted() { live.fetch_sub(1, std::memory_order_relaxed); }
};

TEST(OneshotStress, RacesOfSendDropAndAbortLoseNothing) {
    config c;
    c.workers = 4;
    runtime rt(c);
    const int rounds = static_cast<int>(500 * stress::scale());
    long got = 0, closed = 0, returned = 0;
    for (int r = 0; r < rounds; ++r) {
        auto [tx, rx] = oneshot<counted>();
        const int kind = r % 4;
        if (kind == 3) {
            // The receiver is dropped on one thread while the value is sent on another.
            std::thread drop([rx = std::move(rx)]() mutable { auto gone = std::move(rx); });
            auto res = std::move(tx).send(counted(r));
            if (!res.sent()) ++returned;
            drop.join();
            continue;
        }
        // The receiver waits in a task; the sender sends, or is dropped, from a plain thread;
        // in kind 2 the waiting task is also aborted at the same time.
        auto h = rt.spawn([](oneshot_receiver<counted> rx) -> task<int> {
            auto v = co_await rx;
            co_return v ? v->v : -1;
        }(std::move(rx)));
        std::thread other([&, tx = std::move(tx), kind, r]() mutable {
            if (kind == 1) {
                auto gone = std::move(tx);
            } else {
                (void)std::move(tx).send(counted(r));
            }
        });
        if (kind == 2) h.abort();
        other.join();
        try {
            const int v = h.join();
            if (v == r) {
                ++got;
            } else {
                EXPECT_EQ(v, -1) << "round " << r;
                EXPECT_EQ(kind, 1)
                    << "round " << r << ": a value was sent but the receiver saw none";
                ++closed;
            }
        } catch (const task_cancelled&) {
            EXPECT_EQ(kind, 2);
        }
    }
    rt.shutdown();
    EXPECT_EQ(counted::live.load(), 0) << "values leaked or destroyed twice";
    EXPECT_GT(got, 0);
    EXPECT_EQ(closed, rounds / 4 + (rounds % 4 > 1 ? 1 : 0));
    (void)returned;
}

// oneshot_cell: the cell lives in a waiting task, its sender is moved to a plain thread (and
// moved again there) and sends or is dropped, while the task may be aborted at the same time,
// which destroys the cell under the sender. Value, closed or cancelled as the round says, and
// every value delivered, handed back or destroyed with the cell exactly once.
TEST(OneshotCellStress, CellDestroyedUnderAMovingSenderLosesNothing) {
    config c;
    c.workers = 4;
    runtime rt(c);
    using cell_t = oneshot_cell<counted>;
    const int rounds = static_cast<int>(500 * stress::scale());
    long got = 0, returned = 0, cancelled = 0;
    for (int r = 0; r < rounds; ++r) {
        const int kind = r % 3;  // 0 send, 1 drop, 2 send against an abort
        std::optional<cell_t::sender> out;
        std::atomic<bool> made{false};
        auto h =
            rt.spawn([](std::optional<cell_t::sender>& out, std::atomic<bool>& made) -> task<int> {
                cell_t cell;
                out.emplace(cell.make_sender());
                made.store(true, std::memory_order_release);
                auto v = co_await cell;
                co_return v ? v->v : -1;
            }(out, made));
        while (!made.load(std::memory_order_acquire)) std::this_thread::yield();
        std::thread other([tx = std::move(*out), kind, r, &returned]() mutable {
            cell_t::sender again = std::move(tx);  // a second move, off the task's thread
            if (kind == 1) {
                auto gone = std::move(again);
            } else if (!std::move(again).send(counted(r)).sent()) {
                ++returned;
            }
        });
        out.reset();
        if (kind == 2) h.abort();
        try {
            const int v = h.join();
            if (kind == 1) {
                EXPECT_EQ(v, -1) << "round " << r;
            } else {
                EXPECT_EQ(v, r) << "round " << r;
                ++got;
            }
        } catch (const task_cancelled&) {
            EXPECT_EQ(kind, 2);
            ++cancelled;
        }
        other.join();
    }
    rt.shutdown();
    EXPECT_EQ(counted::live.load(), 0) << "values leaked or destroyed twice";
    EXPECT_GT(got, 0);
    EXPECT_LE(returned, cancelled) << "only a cell gone first hands a value back";
}

// The cell destroyed on one thread while its sender, moved back and forth, sends on another:
// many short races of the destructor against a claim, a move and the finishing write.
TEST(OneshotCellStress, DestructorRacesMovesAndSends) {
    using cell_t = oneshot_cell<counted>;
    const int rounds = static_cast<int>(20000 * stress::scale());
    std::atomic<long> taken{0}, returned{0};
    for (int r = 0; r < rounds; ++r) {
        auto cell = std::make_unique<cell_t>();
        std::atomic<int> go{0};
        std::thread other([tx = cell->make_sender(), &go, &returned, r]() mutable {
            while (go.load(std::memory_order_acquire) == 0) {
            }
            cell_t::sender a = std::move(tx);
            cell_t::sender b = std::move(a);
            if (!std::move(b).send(counted(r)).sent()) returned.fetch_add(1);
        });
        go.store(1, std::memory_order_release);
        if (r % 2 == 0 && cell->try_recv()) taken.fetch_add(1);
        cell.reset();
        other.join();
    }
    EXPECT_EQ(counted::live.load(), 0) << "values leaked or destroyed twice";
    EXPECT_LE(taken.load() + returned.load(), rounds);
}

// Four words, so a read that tore would show: every word of a value holds the same number.
struct watch_words {
    std::uint64_t w[4];
};

TEST(WatchStress, ConcurrentSendsAndLockFreeReadsStayWhole) {
    static_assert(detail::watch_lock_free<watch_words>);
    for (unsigned workers : {2u, 4u}) {
        config c;
        c.workers = workers;
        runtime rt(c);
        auto [tx, rx] = watch<watch_words>(watch_words{});
        const std::uint64_t per = 3000 * stress::scale();
        std::atomic<int> bad{0};
        std::vector<join_handle<std::uint64_t>> hs;
        for (int r = 0; r < 4; ++r) {
            hs.push_back(rt.spawn(
                [](watch_receiver<watch_words> rx, std::atomic<int>& bad) -> task<std::uint64_t> {
                    std::uint64_t last_version = 0, last = 0;
                    while (co_await rx.changed()) {
                        auto [v, version] = rx.borrow_and_update();
                        for (auto x : v.w) bad.fetch_add(x != v.w[0]);
                        bad.fetch_add(version < last_version);
                        last_version = version;
                        last = v.w[0];
                    }
                    co_return last;
                }(rx, bad)));
        }
        {
            // Two plain threads send through the one sender (sends serialize on the sequence);
            // the last send is the main thread's, after both.
            std::thread a([&] {
                for (std::uint64_t i = 1; i <= per; ++i) tx.send(watch_words{{i, i, i, i}});
            });
            std::thread b([&] {
                for (std::uint64_t i = 1; i <= per; ++i) {
                    const std::uint64_t v = per + i;
                    tx.send(watch_words{{v, v, v, v}});
                }
            });
            a.join();
            b.join();
            const std::uint64_t end = 3 * per;
            tx.send(watch_words{{end, end, end, end}});
            auto gone = std::move(tx);
        }
        for (auto& h : hs) EXPECT_EQ(h.join(), 3 * per);
        EXPECT_EQ(bad.load(), 0);
    }
}

}  // namespace
}  // namespace blitz
