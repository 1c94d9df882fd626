// SPDX-License-Identifier: MIT
// Randomized stress of the timer wheel and driver. Runs are bounded by time (scaled by
// BLITZ_STRESS_SCALE); verdicts come from the model and counters, never from elapsed time.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz_testing/wheel_model.hpp"
#include "stress_scale.hpp"
#include "time/timer_driver.hpp"
#include "time/timer_wheel.hpp"

namespace blitz::detail {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

steady::duration budget() { return std::chrono::milliseconds(1500) * stress::scale(); }

// The wheel against an ordered multimap, with random inserts, cancels and advances of every
// size, for a bounded time over fresh seeds.
TEST(TimerStress, WheelMatchesTheModelForABoundedTime) {
    const auto until = steady::now() + budget();
    std::uint64_t seed = 1000;
    std::uint64_t ops = 0;
    while (steady::now() < until) {
        ++seed;
        fast_rng r(mix_seed(seed));
        wheel_model m(std::uint64_t{r.next()} << 4);
        for (int op = 0; op < 2000; ++op, ++ops) {
            const std::uint64_t now = m.now();
            const unsigned k = r.bounded(8);
            if (k < 4) {
                const unsigned span = r.bounded(6);  // within one of the levels, or overflow
                m.insert(now + (std::uint64_t{r.next()} % ((std::uint64_t{1} << (6 * span + 6)))));
            } else if (k < 6 && m.pending() > 0) {
                m.cancel_at_or_after(now + std::uint64_t{r.next()} % 100000);
            } else {
                const std::uint64_t to =
                    now + (std::uint64_t{r.next()} % (std::uint64_t{1} << (6 * r.bounded(5) + 3)));
                const wheel_model::step st = m.advance(to);
                ASSERT_FALSE(st.early) << "seed " << seed;
                ASSERT_TRUE(st.same_fired) << "seed " << seed << " advance to " << to;
                ASSERT_TRUE(st.same_size) << "seed " << seed;
            }
        }
    }
    EXPECT_GT(ops, 0u);
    std::printf("[timer stress] %llu wheel operations over %llu seeds\n",
                static_cast<unsigned long long>(ops), static_cast<unsigned long long>(seed - 1000));
}

// A slot whose waker counts its wakes and notes one that came before the deadline.
struct probe {
    timer_slot slot;
    std::atomic<int> wakes{0};
    steady::time_point deadline;
    std::atomic<bool> early{false};
    bool disarmed = false;  // the sharded test's canceller only
};
void probe_wake(void* v) noexcept {
    auto* p = static_cast<probe*>(v);
    if (steady::now() < p->deadline) p->early = true;
    p->wakes.fetch_add(1);
}
constexpr waker_vtable vt{probe_wake, probe_wake, [](void* p) -> void* { return p; }, [](void*) {}};

// Several threads arm and disarm slots on one driver while others fire it, on the real clock.
// Each slot's waker counts its wakes: a slot fires at most once, never before its deadline,
// exactly when it was not disarmed first; and the driver ends empty.
TEST(TimerStress, DriverArmDisarmAndFireConcurrently) {
    timer_driver drv(/*paused=*/false);
    const auto until = steady::now() + budget();
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> armed{0}, disarmed{0};
    std::vector<std::thread> ts;
    std::vector<std::vector<std::unique_ptr<probe>>> kept(3);
    for (int k = 0; k < 3; ++k) {
        ts.emplace_back([&, k] {
            fast_rng r(mix_seed(77 + k));
            while (steady::now() < until && kept[k].size() < 150'000) {
                auto p = std::make_unique<probe>();
                p->deadline = steady::now() + std::chrono::microseconds(r.bounded(3000));
                if (drv.arm(p->slot, p->deadline, waker(p.get(), &vt))) {
                    armed.fetch_add(1);
                    if (r.bounded(2) && drv.disarm(p->slot)) disarmed.fetch_add(1);
                }
                kept[k].push_back(std::move(p));
            }
        });
    }
    std::thread firer([&] {
        while (!stop.load()) drv.fire_due();
    });
    for (auto& t : ts) t.join();
    // Let everything still armed come due, then fire the rest.
    std::this_thread::sleep_for(5ms);
    drv.fire_due(/*wait=*/true);
    stop = true;
    firer.join();
    EXPECT_EQ(drv.pending(), 0u);
    std::uint64_t fired = 0, twice = 0;
    for (auto& v : kept) {
        for (auto& p : v) {
            const int w = p->wakes.load();
            twice += w > 1;
            EXPECT_FALSE(p->early.load()) << "a timer fired before its deadline";
            fired += w == 1;
            if (w == 1) {
                EXPECT_TRUE(p->slot.fired.load());
            }
        }
    }
    EXPECT_EQ(twice, 0u);
    EXPECT_EQ(fired, armed.load() - disarmed.load());
    EXPECT_EQ(drv.fired_total(), fired);
    std::printf("[timer stress] driver: %llu armed, %llu disarmed, %llu fired\n",
                static_cast<unsigned long long>(armed.load()),
                static_cast<unsigned long long>(disarmed.load()),
                static_cast<unsigned long long>(fired));
}

// Timers per worker (issue 47, item 7): four shards. Each arming thread arms on a shard of its
// own and hands half of its slots to a canceller thread (a task that moved to another worker
// and is aborted there), which disarms them on their shards; two threads fire every shard,
// starting at different ones. Same verdicts as above, and the runtime's earliest expiry ends
// at "none".
TEST(TimerStress, ShardedArmsCrossShardCancelsAndFires) {
    constexpr unsigned shards = 4;
    timer_driver drv(/*paused=*/false, timer_driver::early_fault::none, shards);
    const auto until = steady::now() + budget();
    std::atomic<bool> stop{false};
    std::atomic<unsigned> arming{shards};
    std::atomic<std::uint64_t> armed{0};
    std::mutex handoff_mu;
    std::deque<probe*> handoff;  // armed slots for the canceller (the mutex orders arm first)
    std::vector<std::vector<std::unique_ptr<probe>>> kept(shards);
    std::vector<std::thread> ts;
    for (unsigned k = 0; k < shards; ++k) {
        ts.emplace_back([&, k] {
            fast_rng r(mix_seed(91 + k));
            while (steady::now() < until && kept[k].size() < 100'000) {
                auto p = std::make_unique<probe>();
                p->deadline = steady::now() + std::chrono::microseconds(r.bounded(3000));
                if (drv.arm_on(k, p->slot, p->deadline, waker(p.get(), &vt))) {
                    armed.fetch_add(1);
                    if (r.bounded(2)) {
                        std::lock_guard l(handoff_mu);
                        handoff.push_back(p.get());
                    }
                }
                kept[k].push_back(std::move(p));
            }
            arming.fetch_sub(1);
        });
    }
    std::uint64_t disarmed = 0;
    std::thread canceller([&] {
        for (;;) {
            probe* p = nullptr;
            {
                std::lock_guard l(handoff_mu);
                if (!handoff.empty()) {
                    p = handoff.front();
                    handoff.pop_front();
                }
            }
            if (!p) {
                if (arming.load() == 0) {
                    std::lock_guard l(handoff_mu);
                    if (handoff.empty()) return;
                    continue;
                }
                std::this_thread::yield();
                continue;
            }
            if (drv.disarm(p->slot)) {
                p->disarmed = true;
                ++disarmed;
            }
        }
    });
    std::vector<std::thread> firers;
    for (unsigned from : {0u, 2u}) {
        firers.emplace_back([&, from] {
            while (!stop.load()) drv.fire_due_from(from);
        });
    }
    for (auto& t : ts) t.join();
    canceller.join();
    std::this_thread::sleep_for(5ms);  // everything still armed comes due
    drv.fire_due(/*wait=*/true);
    stop = true;
    for (auto& t : firers) t.join();
    EXPECT_EQ(drv.pending(), 0u);
    EXPECT_EQ(drv.earliest_tick(), UINT64_MAX);
    std::uint64_t fired = 0, twice = 0, woke_after_cancel = 0;
    for (auto& v : kept) {
        for (auto& p : v) {
            const int w = p->wakes.load();
            twice += w > 1;
            woke_after_cancel += p->disarmed && w > 0;
            EXPECT_FALSE(p->early.load()) << "a timer fired before its deadline";
            fired += w == 1;
        }
    }
    EXPECT_EQ(twice, 0u);
    EXPECT_EQ(woke_after_cancel, 0u) << "a successful cancel was followed by a wake";
    EXPECT_EQ(fired, armed.load() - disarmed);
    EXPECT_EQ(drv.fired_total(), fired);
    std::printf(
        "[timer stress] %u shards: %llu armed, %llu cancelled across shards, %llu fired, "
        "%llu lock waits\n",
        shards, static_cast<unsigned long long>(armed.load()),
        static_cast<unsigned long long>(disarmed), static_cast<unsigned long long>(fired),
        static_cast<unsigned long long>(drv.lock_waits()));
}

}  // namespace
}  // namespace blitz::detail
