// SPDX-License-Identifier: MIT
// timer_wheel: level choice (T1), next expiry (T2), cascading (T3), firing and overflow (T4),
// cancel (T5); and a differential test against an ordered-multimap model.

#include "time/timer_wheel.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "base/rng.hpp"
#include "blitz_testing/wheel_model.hpp"

namespace blitz::detail {
namespace {

constexpr std::uint64_t k64(unsigned k) { return std::uint64_t{1} << (6 * k); }

TEST(TimerWheelLevel, FollowsTheHighestDifferingBit) {
    EXPECT_EQ(timer_wheel::level_for(0, 1), 0u);
    EXPECT_EQ(timer_wheel::level_for(0, 63), 0u);
    EXPECT_EQ(timer_wheel::level_for(0, 64), 1u);
    EXPECT_EQ(timer_wheel::level_for(0, 4095), 1u);
    EXPECT_EQ(timer_wheel::level_for(0, 4096), 2u);
    EXPECT_EQ(timer_wheel::level_for(0, k64(3)), 3u);
    EXPECT_EQ(timer_wheel::level_for(0, k64(4)), 4u);
    EXPECT_EQ(timer_wheel::level_for(0, k64(5) - 1), 4u);
    EXPECT_EQ(timer_wheel::level_for(0, k64(5)), 5u);  // overflow past ~12.4 days
    // Relative to `elapsed`, not to zero: 63 -> 64 crosses a level-0 block boundary.
    EXPECT_EQ(timer_wheel::level_for(63, 64), 1u);
    EXPECT_EQ(timer_wheel::level_for(64, 127), 0u);
}

TEST(TimerWheel, DueDeadlinesAreNotLinked) {
    timer_wheel w(100);
    timer_entry e;
    e.deadline = 100;
    EXPECT_FALSE(w.insert(&e));
    e.deadline = 50;
    EXPECT_FALSE(w.insert(&e));
    EXPECT_EQ(w.size(), 0u);
}

TEST(TimerWheel, NextExpiryIsTheEarliestSlotAndNeverLaterThanADeadline) {
    timer_wheel w;
    timer_entry a, b, c;
    a.deadline = 5000;  // level 2
    b.deadline = 70;    // level 1: slot starts at 64
    c.deadline = 3;     // level 0
    w.insert(&a);
    w.insert(&b);
    w.insert(&c);
    EXPECT_EQ(w.next_expiration(), 3u);
    w.remove(&c);
    EXPECT_EQ(w.next_expiration(), 64u);  // the cascade point, before b's deadline
    w.remove(&b);
    EXPECT_EQ(w.next_expiration(), 4096u);
    w.remove(&a);
    EXPECT_EQ(w.next_expiration(), std::nullopt);
}

TEST(TimerWheel, CascadesFromHigherLevelsAndFiresExactlyAtTheDeadline) {
    timer_wheel w;
    timer_entry e;
    e.deadline = k64(3) + 5 * k64(2) + 7 * 64 + 9;  // starts at level 3
    ASSERT_TRUE(w.insert(&e));
    EXPECT_EQ(e.level, 3u);
    std::vector<std::uint64_t> fired_at;
    auto fire = [&](timer_entry*) { fired_at.push_back(w.elapsed()); };
    EXPECT_EQ(w.advance(e.deadline - 1, fire), 0u);  // never early
    EXPECT_TRUE(e.linked());
    EXPECT_EQ(e.level, 0u);  // cascaded all the way down
    EXPECT_GE(w.cascades(), 3u);
    EXPECT_EQ(w.advance(e.deadline, fire), 1u);
    ASSERT_EQ(fired_at.size(), 1u);
    EXPECT_EQ(fired_at[0], e.deadline);
    EXPECT_EQ(w.size(), 0u);
}

TEST(TimerWheel, EqualDeadlinesFireInTheSameAdvance) {
    timer_wheel w;
    std::vector<timer_entry> es(100);
    for (auto& e : es) {
        e.deadline = 12'345;
        w.insert(&e);
    }
    std::size_t n = 0;
    EXPECT_EQ(w.advance(12'344, [&](timer_entry*) { ++n; }), 0u);
    EXPECT_EQ(w.advance(12'345, [&](timer_entry*) { ++n; }), 100u);
    EXPECT_EQ(n, 100u);
}

TEST(TimerWheel, OverflowEntriesMigrateAndFirePastThirteenDays) {
    timer_wheel w;
    timer_entry e;
    const std::uint64_t thirteen_days = 13ull * 24 * 3600 * 1000;
    e.deadline = thirteen_days;
    ASSERT_TRUE(w.insert(&e));
    EXPECT_EQ(e.level, timer_entry::overflow_level);
    EXPECT_EQ(w.next_expiration(), thirteen_days & ~(timer_wheel::horizon - 1));
    std::size_t fired = 0;
    auto fire = [&](timer_entry*) { ++fired; };
    w.advance(thirteen_days - 1, fire);
    EXPECT_EQ(fired, 0u);
    EXPECT_LT(e.level, timer_entry::overflow_level);  // moved into the wheel
    w.advance(thirteen_days, fire);
    EXPECT_EQ(fired, 1u);
}

TEST(TimerWheel, CancelIsImmediateAndACancelledEntryNeverFires) {
    timer_wheel w;
    timer_entry a, b;
    a.deadline = b.deadline = 1000;
    w.insert(&a);
    w.insert(&b);
    w.remove(&a);
    EXPECT_FALSE(a.linked());
    EXPECT_EQ(w.size(), 1u);
    std::set<timer_entry*> fired;
    w.advance(2000, [&](timer_entry* e) { fired.insert(e); });
    EXPECT_EQ(fired, std::set<timer_entry*>{&b});
    w.remove(&a);  // removing twice is harmless
}

// ---- differential test against an ordered multimap ----

struct model_run {
    std::uint64_t seed;
    std::string failure;  // empty when the wheel matched the model
};

std::uint64_t pick_offset(fast_rng& r) {
    static const std::uint64_t edges[] = {0,          1,          63,     64,         65,
                                          4095,       4096,       4097,   k64(3) - 1, k64(3),
                                          k64(3) + 1, k64(4) - 1, k64(4), k64(4) + 1, k64(5) - 1,
                                          k64(5),     k64(5) + 1};
    const std::uint64_t thirty_days = 30ull * 24 * 3600 * 1000;
    switch (r.bounded(4)) {
        case 0:
            return edges[r.bounded(sizeof edges / sizeof edges[0])];
        case 1:
            return r.bounded(200);
        case 2:
            return (std::uint64_t{r.next()} << 20 | r.next()) % thirty_days;
        default:
            return std::uint64_t{r.next()} % (k64(1 + r.bounded(4)) + 1);
    }
}

model_run differential(std::uint64_t seed, int ops) {
    fast_rng r(mix_seed(seed));
    const std::uint64_t start = r.bounded(2) ? 0 : (std::uint64_t{r.next()} << 8);
    wheel_model m(start);
    auto fail = [&](const std::string& why) { return model_run{seed, why}; };

    for (int op = 0; op < ops; ++op) {
        const std::uint64_t now = m.now();
        const unsigned kind = r.bounded(10);
        if (kind < 5) {  // insert, relative to the current time or aligned to a block boundary
            std::uint64_t d = now + pick_offset(r);
            if (r.bounded(4) == 0) {
                const std::uint64_t block = k64(1 + r.bounded(5));
                d = (d / block + r.bounded(2)) * block;
            }
            // A refused deadline fires at once, as the model expects for d <= now.
            if (!m.insert(d) && d > now) return fail("insert refused a deadline in the future");
        } else if (kind < 7) {  // cancel a random live timer
            if (m.pending() == 0) continue;
            m.cancel_nth(
                r.bounded(static_cast<std::uint32_t>(std::min<std::size_t>(m.pending(), 1000))));
        } else {  // advance: a little, a lot, or exactly to / just before a pending deadline
            std::uint64_t target = now;
            const unsigned how = r.bounded(5);
            if (how == 0)
                target = now + r.bounded(3);
            else if (how == 1)
                target = now + r.bounded(5000);
            else if (how == 2)
                target = now + (std::uint64_t{r.next()} % k64(4 + r.bounded(2)));
            else if (m.pending() > 0)
                target = std::max(now, m.earliest() - r.bounded(2));
            const wheel_model::step st = m.advance(target);
            if (st.early) return fail("an entry fired before its deadline");
            if (!st.same_fired) {
                return fail("advance to " + std::to_string(target) + ": model fired " +
                            std::to_string(st.want) + ", wheel fired " + std::to_string(st.got));
            }
            if (!st.same_size) return fail("wheel size differs from the model");
            if (!st.next_ok) return fail("next expiration later than the earliest deadline");
        }
    }
    return {seed, ""};
}

TEST(TimerWheelDifferential, MatchesTheOrderedMapModelOverManySeeds) {
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
        model_run m = differential(seed, 3000);
        ASSERT_TRUE(m.failure.empty()) << "seed " << m.seed << ": " << m.failure;
    }
}

}  // namespace
}  // namespace blitz::detail
