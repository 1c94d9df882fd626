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

// N tasks from two producers, A and B (bit i of b_tasks: task i is B's). Every task is taken
// once, and each producer's in index order. Fibers run one at a time: plain fields are fine.
template <std::size_t N>
struct queue_ledger {
    explicit queue_ledger(unsigned b_tasks) : b_tasks(b_tasks) {}
    const unsigned b_tasks;
    std::array<task_header, N> tasks;
    std::array<int, N> taken{};
    std::array<int, 2> last{-1, -1};  // per producer
    void take(task_header* t) {
        const auto i = static_cast<int>(t - tasks.data());
        BLITZ_MODEL_CHECK(i >= 0 && i < static_cast<int>(N));
        ++taken[static_cast<std::size_t>(i)];
        BLITZ_MODEL_CHECK(taken[static_cast<std::size_t>(i)] == 1);  // taken twice
        int& l = last[(b_tasks >> i) & 1];
        BLITZ_MODEL_CHECK(i > l);  // a producer's tasks out of order
        l = i;
    }
    // After every producer joined, everything pushed is reachable: drain, and each task left
    // exactly once.
    void drain(global_queue& g) {
        while (task_header* t = g.pop()) take(t);
        for (std::size_t i = 0; i < N; ++i) BLITZ_MODEL_CHECK(taken[i] == 1);
        BLITZ_MODEL_CHECK(g.len() == 0);
        BLITZ_MODEL_CHECK(g.empty());
    }
};

// `attempts` calls of fetch on this fiber and on each of consumers - 1 others, which it joins.
template <class Fetch>
void fetch_concurrently(int consumers, int attempts, Fetch fetch) {
    std::vector<std::unique_ptr<thread>> cs;
    for (int c = 1; c < consumers; ++c) {
        cs.push_back(std::make_unique<thread>([&] {
            for (int k = 0; k < attempts; ++k) fetch();
        }));
    }
    for (int k = 0; k < attempts; ++k) fetch();
    for (auto& c : cs) c->join();
}

// Tasks 0 and 1 come from producer A (one chain), 2 and 3 from producer B (two pushes).
std::function<void()> queue_body(int consumers, int attempts) {
    return [consumers, attempts] {
        queue_ledger<4> l(0b1100);
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
        fetch_concurrently(consumers, attempts, fetch);
        a.join();
        b.join();
        l.drain(g);
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
        queue_ledger<6> l(0b001100);
        auto& tasks = l.tasks;
        global_queue g;
        detail::task_batch batch;
        auto fetch = [&] {
            task_header* out[1];
            if (g.pop_share(out, 1, 1, 1, 1) == 1) l.take(out[0]);
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
        fetch_concurrently(consumers, attempts, fetch);
        a.join();
        b.join();
        l.drain(g);
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
