// SPDX-License-Identifier: MIT
// Model: the global injection queue (G1 as amended by issue 21) with its lock-free producers.
// Two producers push (one a chain of two tasks, the other two single tasks) while one or two
// consumers fetch under the consumers' lock, through the stub's re-insertion and the window of
// a push in flight. Every task leaves exactly once, each producer's in its order, and the length
// never drops below what is still queued (it never wraps below zero).

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "model.hpp"
#include "model_report.hpp"
#include "sched/global_queue.hpp"
#include "task/task_access.hpp"

namespace blitz::model {
namespace {

using detail::global_queue;
using detail::task_header;

// Tasks 0 and 1 come from producer A (one chain), 2 and 3 from producer B (two pushes).
struct queue_ledger {
    std::array<task_header, 4> tasks;
    std::array<int, 4> taken{};
    int last_a = -1, last_b = -1;  // fibers run one at a time: plain is fine
    void take(task_header* t) {
        const auto i = static_cast<int>(t - tasks.data());
        BLITZ_MODEL_CHECK(i >= 0 && i < 4);
        ++taken[static_cast<std::size_t>(i)];
        BLITZ_MODEL_CHECK(taken[static_cast<std::size_t>(i)] == 1);  // taken twice
        int& last = i < 2 ? last_a : last_b;
        BLITZ_MODEL_CHECK(i > last);  // a producer's tasks out of order
        last = i;
    }
};

std::function<void()> queue_body(int consumers, int attempts) {
    return [consumers, attempts] {
        queue_ledger l;
        global_queue g;
        auto fetch = [&] {
            task_header* out[4];
            const std::uint32_t n = g.pop_share(out, 4, 1, 1, 4);
            for (std::uint32_t k = 0; k < n; ++k) l.take(out[k]);
            BLITZ_MODEL_CHECK(g.len() <= 4);  // the length never wraps below zero
        };
        thread a([&] {
            detail::task_access::queue_next(l.tasks[0])
                .store(&l.tasks[1], std::memory_order_relaxed);
            g.push_batch(&l.tasks[0], &l.tasks[1], 2);
        });
        thread b([&] {
            g.push(&l.tasks[2]);
            g.push(&l.tasks[3]);
        });
        std::vector<std::unique_ptr<thread>> cs;
        for (int c = 1; c < consumers; ++c) {
            cs.push_back(std::make_unique<thread>([&] {
                for (int k = 0; k < attempts; ++k) fetch();
            }));
        }
        for (int k = 0; k < attempts; ++k) fetch();
        a.join();
        b.join();
        for (auto& c : cs) c->join();
        // Everything pushed is reachable now: drain, and each task left exactly once.
        while (task_header* t = g.pop()) l.take(t);
        for (int i = 0; i < 4; ++i) BLITZ_MODEL_CHECK(l.taken[static_cast<std::size_t>(i)] == 1);
        BLITZ_MODEL_CHECK(g.len() == 0);
        BLITZ_MODEL_CHECK(g.empty());
    };
}

TEST(ModelGlobalQueue, TwoProducersAndAConsumerLoseAndDuplicateNothing) {
    expect_holds("global queue: a chain and two pushes against one consumer", options{},
                 queue_body(1, 3));
}

TEST(ModelGlobalQueue, TwoProducersAndTwoConsumers) {
    expect_holds("global queue: a chain and two pushes against two consumers", options{},
                 queue_body(2, 2));
}

// Negative control: the defect must be found.
TEST(ModelGlobalQueue, ControlNaiveResetToTheStubIsCaught) {
    options o;
    o.weaken = "global_reset_to_stub";
    expect_caught("global queue control: the last node is taken by resetting the tail", o,
                  queue_body(1, 3));
}

}  // namespace
}  // namespace blitz::model
