// SPDX-License-Identifier: MIT
// Model: the bounded channel (X5) with its real awaitables at capacity 1, so most sends wait:
// a producer task, a consumer task and a plain thread that takes values with try_recv. Every
// value arrives exactly once and in order per producer; when the producer is done and the
// channel drained, the consumer sees the end.

#include <gtest/gtest.h>

#include <vector>

#include "blitz/chan/channel.hpp"
#include "blitz/testing.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task/alloc_stats.hpp"
#include "task_harness.hpp"

namespace blitz::model {
namespace {

constexpr int values = 2;

task<void> produce(sender<int> tx) {
    for (int i = 1; i <= values; ++i) {
        const int v = i;
        (void)co_await tx.send(v);
    }
}

task<void> consume(receiver<int> rx, std::vector<int>& got) {
    while (auto v = co_await rx.recv()) got.push_back(*v);
}

std::function<void()> channel_body(bool drop_waiting_send) {
    return [=] {
        std::vector<int> by_task, by_thread;
        {
            task_harness h;
            auto ends = channel<int>(1);
            testing::set_fault_drop_waiting_send(ends.first, drop_waiting_send);
            receiver<int>& rx = ends.second;
            auto p = h.spawn(produce(std::move(ends.first)));
            auto c = h.spawn(consume(rx, by_task));
            thread worker([&h] { h.run_worker(); });
            thread taker([&] {
                if (auto v = rx.try_recv()) by_thread.push_back(*v);
            });
            taker.join();
            p.join();
            {
                auto gone = std::move(rx);
            }  // our receiver goes; the task's drains the rest
            c.join();
            h.stop();
            worker.join();
        }
        // Exactly once, in order within each receiver.
        std::vector<bool> seen(values + 1, false);
        for (const auto* got : {&by_task, &by_thread}) {
            for (std::size_t i = 0; i < got->size(); ++i) {
                const int v = (*got)[i];
                BLITZ_MODEL_CHECK(v >= 1 && v <= values && !seen[static_cast<std::size_t>(v)]);
                seen[static_cast<std::size_t>(v)] = true;
                if (i > 0) BLITZ_MODEL_CHECK((*got)[i - 1] < v);
            }
        }
        for (int v = 1; v <= values; ++v) BLITZ_MODEL_CHECK(seen[static_cast<std::size_t>(v)]);
    };
}

// try_send's one-step slot and position (the free-slot semaphore's ticket), from two plain
// threads into a channel of capacity 3 (room for all three values), while a third thread takes
// values with try_recv: each value arrives once, each sender's in its order.
std::function<void()> try_send_body() {
    return [] {
        auto [tx, rx] = channel<int>(3);
        sender<int> tx2 = tx;
        std::vector<int> got;
        thread a([&] {
            BLITZ_MODEL_CHECK(tx.try_send(10).sent());
            BLITZ_MODEL_CHECK(tx.try_send(11).sent());
        });
        thread b([&] { BLITZ_MODEL_CHECK(tx2.try_send(20).sent()); });
        thread c([&] {
            while (got.size() < 3) {
                if (auto v = rx.try_recv()) {
                    got.push_back(*v);
                } else {
                    yield();
                }
            }
        });
        a.join();
        b.join();
        c.join();
        int last_a = 0, last_b = 0;
        for (int v : got) {
            int& last = v < 20 ? last_a : last_b;
            BLITZ_MODEL_CHECK(v > last);  // once, and in each sender's order
            last = v;
        }
        BLITZ_MODEL_CHECK(last_a == 11 && last_b == 20);
    };
}

TEST(ModelChannel, TrySendsFromTwoThreadsTakeDistinctSlotsInOrder) {
    expect_holds("channel: two threads try_send into capacity 3, a third try_recv", options{},
                 try_send_body());
}

TEST(ModelChannel, ControlTicketReadApartFromThePermitIsCaught) {
    options o;
    o.weaken = "ticket_read_apart";
    o.max_steps = 5000;
    expect_caught("channel control: try_send reads its position apart from taking the slot", o,
                  try_send_body());
}

TEST(ModelChannel, ValuesArriveOnceAndInOrderThroughAFullChannel) {
    make_runtime_statics();
    expect_holds("channel: capacity 1, a producer task, a consumer task and try_recv", options{},
                 channel_body(false));
}

TEST(ModelChannel, ControlWaitingSendDroppedIsCaught) {
    make_runtime_statics();
    options o;
    o.max_steps = 5000;
    expect_caught("channel control: a send that had to wait is dropped (X5)", o,
                  channel_body(true));
}

}  // namespace
}  // namespace blitz::model
