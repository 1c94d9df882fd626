// SPDX-License-Identifier: MIT
// Model: a worker's inbox of pinned tasks (issue 47; sched/pinned_queue.hpp). Two threads each
// wake a pinned task of the home worker (a queue entry the home must see) and push it; the home
// takes the inbox until it has both: each task comes out once, with what its pusher wrote.
// Second body: the park handshake. A pusher pushes and then reads the home's parked bit; the
// home sets the bit and then looks at the inbox once more. Whatever the interleaving, the home
// does not sleep on a task nobody wakes it for. Controls: the push relaxed (the home takes a
// task without its queue entry), and a home that parks without its look at park.

#include <gtest/gtest.h>

#include "model.hpp"
#include "model_report.hpp"
#include "sched/pinned_queue.hpp"

namespace blitz::model {
namespace {

struct pinned_task {
    detail::atomic<pinned_task*> next{nullptr};
    detail::atomic<int> entry{0};  // the queue entry: written before the push
    int taken = 0;                 // the home's alone
};
struct pinned_task_link {
    static detail::atomic<pinned_task*>& of(pinned_task* t) noexcept { return t->next; }
};
using inbox = detail::pinned_inbox<pinned_task, pinned_task_link>;

std::function<void()> takes_body() {
    return [] {
        inbox box;
        pinned_task a, b;
        auto wake_elsewhere = [&](pinned_task& t) {
            t.entry.store(1, std::memory_order_relaxed);  // published by the push
            box.push(&t);
        };
        thread ta([&] { wake_elsewhere(a); });
        thread tb([&] { wake_elsewhere(b); });
        int got = 0;
        while (got < 2) {
            for (pinned_task* t = box.take_oldest_first(); t;) {
                pinned_task* next = inbox::next(t);
                BLITZ_MODEL_CHECK(t->entry.load(std::memory_order_relaxed) == 1);
                ++t->taken;
                ++got;
                t = next;
            }
            if (got < 2) detail::spin_pause();
        }
        ta.join();
        tb.join();
        BLITZ_MODEL_CHECK(a.taken == 1 && b.taken == 1);
        BLITZ_MODEL_CHECK(box.take_oldest_first() == nullptr);
    };
}

std::function<void()> park_body() {
    return [] {
        inbox box;
        pinned_task t;
        atomic<int> parked{0};  // the home's parked bit (idle_state's seq_cst RMW)
        bool pusher_saw_parked = false, home_saw_task = false;
        thread pusher([&] {
            box.push(&t);
            pusher_saw_parked = parked.load() == 1;  // then unparks the home
        });
        thread home([&] {
            parked.fetch_add(1);
            home_saw_task = box.seen_at_park();  // then stays awake
        });
        pusher.join();
        home.join();
        BLITZ_MODEL_CHECK(pusher_saw_parked || home_saw_task);
    };
}

TEST(ModelPinnedInbox, EveryPushedTaskIsTakenOnceWithItsEntry) {
    expect_holds("pinned inbox: two pushers against the home's takes", untimed(), takes_body());
}

TEST(ModelPinnedInbox, APushNeverMissesAHomeThatParks) {
    expect_holds("pinned inbox: push and parked bit against park and look", untimed(), park_body());
}

TEST(ModelPinnedInbox, ControlRelaxedPushIsCaught) {
    options o = untimed();
    o.weaken = "inbox_push";  // the completion_inbox push it builds on
    expect_caught("pinned inbox control: the push's CAS relaxed", o, takes_body());
}

TEST(ModelPinnedInbox, ControlParkWithoutALookIsCaught) {
    options o = untimed();
    o.weaken = "pinned_no_look_at_park";
    expect_caught("pinned inbox control: the home parks without its look at park", o, park_body());
}

}  // namespace
}  // namespace blitz::model
