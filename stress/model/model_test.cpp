// SPDX-License-Identifier: MIT
// The model checker checked: litmus tests whose allowed outcomes C++ fixes exactly. Each test
// collects the outcomes of every explored execution and compares them with the set the memory
// model allows, so a checker that explores too little (misses an outcome) or too much (produces
// a forbidden one) fails here.

#include "model.hpp"

#include <gtest/gtest.h>

#include <new>
#include <set>
#include <utility>

namespace blitz::model {
namespace {

using outcomes = std::set<std::pair<int, int>>;
constexpr auto relaxed = std::memory_order_relaxed;
constexpr auto acquire = std::memory_order_acquire;
constexpr auto release = std::memory_order_release;
constexpr auto seq_cst = std::memory_order_seq_cst;

options unbounded(bool reduce = true) {
    options o;
    o.preemption_bound = -1;
    o.reduce = reduce;
    return o;
}

// Store buffering: each thread stores its flag and loads the other's.
outcomes store_buffering(std::memory_order mo, bool reduce) {
    outcomes seen;
    const report r = explore(unbounded(reduce), [&] {
        atomic<int> x{0}, y{0};
        int r1 = -1, r2 = -1;
        thread a([&] {
            x.store(1, mo);
            r1 = y.load(mo);
        });
        thread b([&] {
            y.store(1, mo);
            r2 = x.load(mo);
        });
        a.join();
        b.join();
        seen.insert({r1, r2});
    });
    EXPECT_TRUE(r.exhausted) << summary(r);
    EXPECT_FALSE(r.failed) << summary(r);
    return seen;
}

TEST(ModelLitmus, StoreBufferingRelaxedAllowsBothZero) {
    for (bool reduce : {true, false}) {
        EXPECT_EQ(store_buffering(relaxed, reduce), (outcomes{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
    }
}

TEST(ModelLitmus, StoreBufferingSeqCstForbidsBothZero) {
    for (bool reduce : {true, false}) {
        EXPECT_EQ(store_buffering(seq_cst, reduce), (outcomes{{0, 1}, {1, 0}, {1, 1}}));
    }
}

// Message passing: data then flag; the reader reads flag then data.
outcomes message_passing(std::memory_order store_mo, std::memory_order load_mo, bool fences) {
    outcomes seen;
    const report r = explore(unbounded(), [&] {
        atomic<int> data{0}, flag{0};
        int f = -1, d = -1;
        thread w([&] {
            data.store(1, relaxed);
            if (fences) fence(release);
            flag.store(1, store_mo);
        });
        thread rd([&] {
            f = flag.load(load_mo);
            if (fences) fence(acquire);
            d = data.load(relaxed);
        });
        w.join();
        rd.join();
        seen.insert({f, d});
    });
    EXPECT_TRUE(r.exhausted) << summary(r);
    return seen;
}

TEST(ModelLitmus, MessagePassingNeedsReleaseAndAcquire) {
    const outcomes all{{0, 0}, {0, 1}, {1, 0}, {1, 1}};
    const outcomes ordered{{0, 0}, {0, 1}, {1, 1}};
    EXPECT_EQ(message_passing(relaxed, relaxed, false), all);
    EXPECT_EQ(message_passing(release, relaxed, false), all);
    EXPECT_EQ(message_passing(relaxed, acquire, false), all);
    EXPECT_EQ(message_passing(release, acquire, false), ordered);
    // Fences carry the same synchronization for relaxed accesses.
    EXPECT_EQ(message_passing(relaxed, relaxed, true), ordered);
}

// Coherence: two loads of one location by one thread never go back in modification order.
TEST(ModelLitmus, ReadsOfOneLocationAreCoherent) {
    outcomes seen;
    const report r = explore(unbounded(), [&] {
        atomic<int> x{0};
        int a = -1, b = -1;
        thread w([&] {
            x.store(1, relaxed);
            x.store(2, relaxed);
        });
        thread rd([&] {
            a = x.load(relaxed);
            b = x.load(relaxed);
        });
        w.join();
        rd.join();
        seen.insert({a, b});
    });
    EXPECT_TRUE(r.exhausted);
    EXPECT_EQ(seen, (outcomes{{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}}));
}

// A thread's own store hides older ones from its later loads, and so does a store that
// happens-before the load through a join.
TEST(ModelLitmus, HappensBeforeHidesOlderStores) {
    outcomes seen;
    explore(unbounded(), [&] {
        atomic<int> x{0};
        int mine = -1;
        thread w([&] { x.store(1, relaxed); });
        w.join();
        thread rd([&] {
            x.store(2, relaxed);
            mine = x.load(relaxed);
        });
        rd.join();
        seen.insert({mine, x.load(relaxed)});
    });
    EXPECT_EQ(seen, (outcomes{{2, 2}}));
}

// Release sequences: an RMW between the release store and the acquire load keeps the
// synchronization; a plain relaxed store in its place does not (C++20).
std::set<int> release_sequence(bool middle_is_rmw) {
    std::set<int> data_seen_at_two;
    explore(unbounded(), [&] {
        atomic<int> data{0}, flag{0};
        int f = -1, d = -1;
        thread w([&] {
            data.store(1, relaxed);
            flag.store(1, release);
        });
        thread m([&] {
            if (middle_is_rmw) {
                flag.fetch_add(1, relaxed);
            } else if (flag.load(relaxed) == 1) {
                flag.store(2, relaxed);
            }
        });
        thread rd([&] {
            f = flag.load(acquire);
            d = data.load(relaxed);
        });
        w.join();
        m.join();
        rd.join();
        if (f == 2) data_seen_at_two.insert(d);
    });
    return data_seen_at_two;
}

TEST(ModelLitmus, ReadModifyWritesContinueReleaseSequences) {
    EXPECT_EQ(release_sequence(true), (std::set<int>{1}));
    EXPECT_EQ(release_sequence(false), (std::set<int>{0, 1}));
}

// The checker's verdicts: a check that can fail is found, with a trace and a replayable
// schedule; one that cannot is not.
TEST(ModelExplorer, FindsALostUpdateAndReplaysIt) {
    auto body = [](bool rmw) {
        return [rmw] {
            atomic<int> n{0};
            auto inc = [&] {
                if (rmw) {
                    n.fetch_add(1, relaxed);
                } else {
                    n.store(n.load(relaxed) + 1, relaxed);
                }
            };
            thread a(inc), b(inc);
            a.join();
            b.join();
            BLITZ_MODEL_CHECK(n.load(relaxed) == 2);
        };
    };
    const report ok = explore(options{}, body(true));
    EXPECT_FALSE(ok.failed) << summary(ok);
    EXPECT_TRUE(ok.exhausted);

    const report bad = explore(options{}, body(false));
    ASSERT_TRUE(bad.failed);
    EXPECT_NE(bad.failure.find("n.load(relaxed) == 2"), std::string::npos) << bad.failure;
    EXPECT_NE(bad.trace.find("store"), std::string::npos) << bad.trace;
    options again;
    again.replay = bad.schedule;
    const report replayed = explore(again, body(false));
    EXPECT_TRUE(replayed.failed) << "schedule " << bad.schedule;
    EXPECT_EQ(replayed.executions, 1u);
    EXPECT_EQ(replayed.trace, bad.trace);
}

// An atomic used after its object was destroyed fails the execution (the storage stays
// readable here, as it does for an object whose memory was reused), and so does a destruction
// that a store to the object does not happen before (a data race with the store). Waiting for
// the other thread with acquire is fine.
TEST(ModelExplorer, FindsAUseOfAnAtomicAfterItsDestructionAndARacingDestruction) {
    enum class wait { acquire, relaxed, none };
    auto body = [](wait how) {
        return [how] {
            alignas(atomic<int>) unsigned char storage[sizeof(atomic<int>)];
            auto* a = new (storage) atomic<int>(0);
            atomic<int> done{0};
            thread user([&] {
                a->store(1, relaxed);
                done.store(1, release);
            });
            if (how != wait::none) {
                while (done.load(how == wait::acquire ? acquire : relaxed) == 0) yield();
            }
            a->~atomic();
            user.join();
        };
    };
    const report ok = explore(options{}, body(wait::acquire));
    EXPECT_FALSE(ok.failed) << summary(ok);
    const report used = explore(options{}, body(wait::none));
    ASSERT_TRUE(used.failed);
    EXPECT_NE(used.failure.find("after its object was destroyed"), std::string::npos)
        << used.failure;
    const report raced = explore(options{}, body(wait::relaxed));
    ASSERT_TRUE(raced.failed);
    EXPECT_NE(raced.failure.find("(a data race)"), std::string::npos) << raced.failure;
}

TEST(ModelExplorer, FindsADeadlockBetweenTwoMutexes) {
    const report r = explore(options{}, [] {
        mutex m1, m2;
        thread a([&] {
            m1.lock();
            m2.lock();
            m2.unlock();
            m1.unlock();
        });
        thread b([&] {
            m2.lock();
            m1.lock();
            m1.unlock();
            m2.unlock();
        });
        a.join();
        b.join();
    });
    ASSERT_TRUE(r.failed);
    EXPECT_NE(r.failure.find("deadlock"), std::string::npos) << r.failure;
}

TEST(ModelExplorer, MutexExcludesAndTryLockFailsWhenHeld) {
    const report r = explore(options{}, [] {
        mutex m;
        atomic<int> inside{0};
        atomic<int> try_failed{0};
        auto body = [&] {
            if (!m.try_lock()) {
                try_failed.fetch_add(1, relaxed);
                m.lock();
            }
            BLITZ_MODEL_CHECK(inside.fetch_add(1, relaxed) == 0);
            inside.fetch_sub(1, relaxed);
            m.unlock();
        };
        thread a(body), b(body);
        a.join();
        b.join();
    });
    EXPECT_FALSE(r.failed) << summary(r);
    EXPECT_TRUE(r.exhausted);
}

TEST(ModelExplorer, SpinWithoutYieldIsALivelockAndWithYieldTerminates) {
    auto body = [](bool yields) {
        return [yields] {
            atomic<int> flag{0};
            thread spinner([&] {
                while (flag.load(acquire) == 0) {
                    if (yields) yield();
                }
            });
            thread setter([&] { flag.store(1, release); });
            spinner.join();
            setter.join();
        };
    };
    options o;
    o.max_steps = 2000;
    const report good = explore(o, body(true));
    EXPECT_FALSE(good.failed) << summary(good);
    EXPECT_TRUE(good.exhausted);
    o.preemption_bound = 0;  // the spinner is never preempted
    const report bad = explore(o, body(false));
    ASSERT_TRUE(bad.failed);
    EXPECT_NE(bad.failure.find("livelock"), std::string::npos) << bad.failure;
}

TEST(ModelExplorer, FutexWaitsForItsWakeAndTimesOutInVirtualTime) {
    auto body = [](bool wakes, bool timed) {
        return [wakes, timed] {
            atomic<std::uint32_t> word{0};
            bool timed_out = false;
            thread waiter([&] {
                while (word.load(acquire) == 0) {
                    const auto t =
                        timed ? std::chrono::milliseconds(5) : std::chrono::nanoseconds(-1);
                    if (!impl::futex_wait(word.location(), 0, t)) {
                        timed_out = true;
                        break;
                    }
                }
            });
            thread waker([&] {
                if (!wakes) return;
                word.store(1, release);
                impl::futex_wake(word.location(), 1);
            });
            waiter.join();
            waker.join();
            if (timed_out) BLITZ_MODEL_CHECK(now() == std::chrono::milliseconds(5));
            BLITZ_MODEL_CHECK(timed_out || word.load(relaxed) == 1);
        };
    };
    const report woken = explore(options{}, body(true, false));
    EXPECT_FALSE(woken.failed) << summary(woken);
    const report lost = explore(options{}, body(false, false));
    ASSERT_TRUE(lost.failed);
    EXPECT_NE(lost.failure.find("deadlock"), std::string::npos) << lost.failure;
    const report timeout = explore(options{}, body(false, true));
    EXPECT_FALSE(timeout.failed) << summary(timeout);
}

// Sleep sets: threads that touch only their own locations need one execution, not the
// multinomial number of interleavings; and they still find what the full search finds.
TEST(ModelExplorer, SleepSetsCollapseIndependentThreads) {
    auto body = [] {
        atomic<int> a{0}, b{0}, c{0};
        thread ta([&] {
            a.store(1, relaxed);
            a.store(2, relaxed);
        });
        thread tb([&] {
            b.store(1, relaxed);
            b.store(2, relaxed);
        });
        thread tc([&] {
            c.store(1, relaxed);
            c.store(2, relaxed);
        });
        ta.join();
        tb.join();
        tc.join();
    };
    const report full = explore(unbounded(false), body);
    const report reduced = explore(unbounded(true), body);
    EXPECT_TRUE(full.exhausted);
    EXPECT_TRUE(reduced.exhausted);
    EXPECT_GT(full.executions, 100u) << summary(full);
    std::printf("full: %s\nreduced: %s\n", summary(full).c_str(), summary(reduced).c_str());
    EXPECT_EQ(reduced.executions - reduced.redundant, 1u) << summary(reduced);
}

TEST(ModelExplorer, PreemptionBoundLimitsTheSearch) {
    auto body = [] {
        atomic<int> x{0};
        auto work = [&] {
            for (int i = 0; i < 3; ++i) x.fetch_add(1, relaxed);
        };
        thread a(work), b(work);
        a.join();
        b.join();
    };
    std::uint64_t last = 0;
    for (int bound : {0, 1, 2, 3}) {
        options o;
        o.preemption_bound = bound;
        o.reduce = false;
        const report r = explore(o, body);
        EXPECT_TRUE(r.exhausted);
        EXPECT_GT(r.executions, last) << "bound " << bound;
        last = r.executions;
    }
}

}  // namespace
}  // namespace blitz::model
