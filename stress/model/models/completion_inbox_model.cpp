// SPDX-License-Identifier: MIT
// Model: a worker's completion inbox (issue 45; sched/completion_inbox.hpp). Two threads each
// complete a task listed by the owner (a write the owner must see: the task's completed state)
// and push it; the owner takes the inbox until it has both. Every task is taken exactly once,
// and the owner sees what its pusher wrote before the push.

#include <gtest/gtest.h>

#include <cstdint>

#include "model.hpp"
#include "model_report.hpp"
#include "sched/completion_inbox.hpp"

namespace blitz::model {
namespace {

struct inbox_task {
    detail::atomic<inbox_task*> next{nullptr};
    detail::atomic<int> completed{0};  // written before the push, read by the owner
    int taken = 0;                     // the owner's alone
};
struct inbox_task_link {
    static detail::atomic<inbox_task*>& of(inbox_task* t) noexcept { return t->next; }
};
using task_inbox = detail::completion_inbox<inbox_task, inbox_task_link>;

std::function<void()> inbox_body() {
    return [] {
        task_inbox box;
        inbox_task a, b;
        auto complete_elsewhere = [&](inbox_task& t) {
            t.completed.store(1, std::memory_order_relaxed);  // published by the push
            box.push(&t);
        };
        thread ta([&] { complete_elsewhere(a); });
        thread tb([&] { complete_elsewhere(b); });
        int got = 0;
        while (got < 2) {
            for (inbox_task* t = box.take_all(); t; t = task_inbox::next(t)) {
                BLITZ_MODEL_CHECK(t->completed.load(std::memory_order_relaxed) == 1);
                ++t->taken;
                ++got;
            }
            if (got < 2) detail::spin_pause();
        }
        ta.join();
        tb.join();
        BLITZ_MODEL_CHECK(a.taken == 1 && b.taken == 1);
        BLITZ_MODEL_CHECK(box.take_all() == nullptr);  // nothing left, nothing twice
    };
}

TEST(ModelCompletionInbox, EveryHandedBackTaskIsTakenOnceWithItsCompletion) {
    expect_holds("completion inbox: two pushers against the owner's takes", untimed(),
                 inbox_body());
}

TEST(ModelCompletionInbox, ControlRelaxedPushIsCaught) {
    options o = untimed();
    o.weaken = "inbox_push";
    expect_caught("completion inbox control: the push's CAS relaxed", o, inbox_body());
}

TEST(ModelCompletionInbox, ControlTakeByLoadThenClearIsCaught) {
    options o = untimed();
    o.weaken = "inbox_load_then_clear";
    expect_caught("completion inbox control: take_all loads then clears (loses a push)", o,
                  inbox_body());
}

}  // namespace
}  // namespace blitz::model
