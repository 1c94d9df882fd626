// SPDX-License-Identifier: MIT
// Model: the work-stealing ring (local_queue, Q1-Q6) with its capacity shrunk to 4, so that a
// full ring, its overflow of half to the global queue and a steal in progress are all reached
// within a handful of operations. Every task pushed leaves exactly once (popped, stolen or
// overflowed), a thief never reads a slot before the owner's write of it is visible, and the
// ring never holds more than its capacity.

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "model.hpp"
#include "model_report.hpp"
#include "sched/global_queue.hpp"
#include "sched/local_queue.hpp"

namespace blitz::model {
namespace {

using detail::global_queue;
using detail::local_queue;
using detail::task_header;

static_assert(local_queue::capacity == 4, "the model build shrinks the ring to 4 slots");

struct ring_case {
    int pushes;                    // tasks the owner pushes (more than 4 overflows)
    int pops;                      // pops the owner makes after its pushes
    int thieves;                   // threads that each steal once
    local_queue::faults faults{};  // a deliberate defect (negative controls)
};

// Tracks every task's way out; a plain array is fine, fibers run one at a time.
struct ledger {
    std::array<task_header, 8> tasks;
    std::array<int, 8> taken{};
    void take(task_header* t, const char* how) {
        (void)how;
        BLITZ_MODEL_CHECK(t != nullptr);  // a stale slot read as empty
        const auto i = static_cast<std::size_t>(t - tasks.data());
        BLITZ_MODEL_CHECK(i < tasks.size());
        ++taken[i];
        BLITZ_MODEL_CHECK(taken[i] == 1);  // taken twice
    }
};

std::function<void()> ring_body(const ring_case& c) {
    return [c] {
        ledger l;
        global_queue g;
        local_queue owner_ring;
        owner_ring.set_faults(c.faults);
        std::vector<local_queue*> thief_rings;
        for (int i = 0; i < c.thieves; ++i) thief_rings.push_back(new local_queue);
        auto owner = [&] {
            for (int i = 0; i < c.pushes; ++i) {
                owner_ring.push(&l.tasks[static_cast<std::size_t>(i)], g);
                BLITZ_MODEL_CHECK(owner_ring.span() <= local_queue::capacity);  // Q1
            }
            for (int i = 0; i < c.pops; ++i) {
                if (task_header* t = owner_ring.pop()) l.take(t, "pop");
            }
        };
        std::vector<std::unique_ptr<thread>> threads;
        for (int i = 0; i < c.thieves; ++i) {
            local_queue* mine = thief_rings[static_cast<std::size_t>(i)];
            threads.push_back(std::make_unique<thread>([&, mine] {
                const auto r = owner_ring.steal_into(*mine, local_queue::capacity);
                if (r.first) l.take(r.first, "steal");
            }));
        }
        owner();
        for (auto& t : threads) t->join();
        // Drain everything that is left: each task must have left exactly once.
        while (task_header* t = owner_ring.pop()) l.take(t, "drain");
        for (local_queue* r : thief_rings) {
            while (task_header* t = r->pop()) l.take(t, "thief drain");
            delete r;
        }
        while (task_header* t = g.pop()) l.take(t, "global");
        for (int i = 0; i < c.pushes; ++i)
            BLITZ_MODEL_CHECK(l.taken[static_cast<std::size_t>(i)] == 1);
    };
}

TEST(ModelRing, PushPopAndOneThiefLoseAndDuplicateNothing) {
    expect_holds("ring: push 3, pop 2, one thief", options{}, ring_body({3, 2, 1}));
}

TEST(ModelRing, OverflowWhileAThiefStealsLosesNothing) {
    expect_holds("ring: push 6 into 4 slots (overflow), one thief", options{},
                 ring_body({6, 1, 1}));
}

TEST(ModelRing, TwoThievesAndTheOwner) {
    expect_holds("ring: push 3, pop 1, two thieves", options{}, ring_body({3, 1, 2}));
}

// Negative controls: each defect must be found.
TEST(ModelRing, ControlRelaxedTailPublishIsCaught) {
    options o;
    o.weaken = "ring_publish";
    expect_caught("ring control: tail published relaxed", o, ring_body({3, 2, 1}));
}

TEST(ModelRing, ControlThiefClaimingOneLessIsCaught) {
    local_queue::faults f;
    f.steal_claims_one_less = true;
    expect_caught("ring control: a thief claims one task less than it copies", options{},
                  ring_body({3, 2, 1, f}));
}

TEST(ModelRing, ControlFullnessIgnoringAStealInProgressIsCaught) {
    local_queue::faults f;
    f.full_check_uses_real_head = true;
    expect_caught("ring control: fullness ignores a steal in progress", options{},
                  ring_body({6, 1, 1, f}));
}

}  // namespace
}  // namespace blitz::model
