// SPDX-License-Identifier: MIT
// Model: the global injection queue (G1 as amended by issue 21) with its lock-free producers.
// Two producers push (one a chain of two tasks, the other two single tasks) while one or two
// consumers fetch under the consumers' lock, through the stub's re-insertion and the window of
// a push in flight. Every task leaves exactly once, each producer's in its order, and the length
// never drops below what is still queued (it never wraps below zero). Also an overflow's batch
// (task_batch) taken in parts and reused by its producer.

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

// An overflow's batch (issue 21). Producer A pushes tasks 0 and 1 as a batch, then 4 and 5
// through the same batch if a fetch has handed it back by then (else as a chain); producer B
// pushes 2 and 3 singly; consumers fetch one task at a time, so a fetch leaves the batch
// part-taken. Every task once, each producer's in order, and the batch is never refilled while
// a fetch can still read it.
std::function<void()> batch_body(int consumers, int attempts) {
    return [consumers, attempts] {
        std::array<task_header, 6> tasks;
        std::array<int, 6> taken{};
        int last_a = -1, last_b = -1;
        global_queue g;
        detail::task_batch batch;
        auto take = [&](task_header* t) {
            const auto i = static_cast<int>(t - tasks.data());
            BLITZ_MODEL_CHECK(i >= 0 && i < 6);
            BLITZ_MODEL_CHECK(++taken[static_cast<std::size_t>(i)] == 1);
            int& last = (i == 2 || i == 3) ? last_b : last_a;
            BLITZ_MODEL_CHECK(i > last);
            last = i;
        };
        auto fetch = [&] {
            task_header* out[1];
            if (g.pop_share(out, 1, 1, 1, 1) == 1) take(out[0]);
        };
        thread a([&] {
            batch.items()[0] = &tasks[0];
            batch.items()[1] = &tasks[1];
            batch.carry(2);
            g.push_array(&batch);
            if (batch.reusable()) {
                batch.items()[0] = &tasks[4];
                batch.items()[1] = &tasks[5];
                batch.carry(2);
                g.push_array(&batch);
            } else {
                detail::task_access::queue_next(tasks[4]).store(&tasks[5],
                                                                std::memory_order_relaxed);
                g.push_batch(&tasks[4], &tasks[5], 2);
            }
        });
        thread b([&] {
            g.push(&tasks[2]);
            g.push(&tasks[3]);
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
        while (task_header* t = g.pop()) take(t);
        for (int i = 0; i < 6; ++i) BLITZ_MODEL_CHECK(taken[static_cast<std::size_t>(i)] == 1);
        BLITZ_MODEL_CHECK(g.empty());
        BLITZ_MODEL_CHECK(batch.reusable());
    };
}

TEST(ModelGlobalQueue, ABatchReusedByItsProducerLosesAndDuplicatesNothing) {
    expect_holds("global queue: a batch reused by its producer, one consumer", options{},
                 batch_body(1, 3));
}

TEST(ModelGlobalQueue, ABatchAgainstTwoConsumers) {
    expect_holds("global queue: a batch reused by its producer, two consumers", options{},
                 batch_body(2, 2));
}

// Control: a fetch that hands the batch back after taking part of it.
TEST(ModelGlobalQueue, ControlBatchHandedBackEarlyIsCaught) {
    options o;
    o.weaken = "batch_handed_back_early";
    expect_caught("global queue control: a batch handed back before its last task is taken", o,
                  batch_body(1, 3));
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
