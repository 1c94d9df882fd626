// SPDX-License-Identifier: MIT
// Model: notify (X4) with its real awaitable: two tasks wait for notified() while a plain thread
// calls notify_one twice, the second after the first let a task through. Each notify_one lets
// exactly one task through, by the lock-free permit or by waking a waiter under the lock; both
// tasks finish, no permit is left, and each task sees what the notifier wrote before notifying.

#include <gtest/gtest.h>

#include "blitz/sync/notify.hpp"
#include "blitz/testing.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task_harness.hpp"

namespace blitz::model {
namespace {

struct shared {
    notify n;
    detail::atomic<int> data{0};     // written before each notify_one
    detail::atomic<int> through{0};  // tasks let through so far
    int stale = 0;                   // tasks that did not see the write (the worker's alone)
};

task<void> wait_once(shared& s) {
    co_await s.n.notified();
    if (s.data.load(std::memory_order_relaxed) == 0) ++s.stale;
    s.through.fetch_add(1, std::memory_order_relaxed);
}

std::function<void()> notify_body() {
    return [] {
        shared s;
        task_harness h;
        auto a = h.spawn(wait_once(s));
        auto b = h.spawn(wait_once(s));
        thread worker([&h] { h.run_worker(); });
        thread plain([&s] {
            s.data.store(1, std::memory_order_relaxed);  // published by the notify
            s.n.notify_one();
            while (s.through.load(std::memory_order_relaxed) < 1) detail::spin_pause();
            s.n.notify_one();
        });
        plain.join();
        a.join();
        b.join();
        h.stop();
        worker.join();
        BLITZ_MODEL_CHECK(s.stale == 0);
        BLITZ_MODEL_CHECK(s.n.stored_permits() == 0);
    };
}

TEST(ModelNotify, EachNotifyOneLetsOneTaskThroughWithWhatItWrote) {
    make_runtime_statics();
    expect_holds("notify: two waiting tasks, two notify_one from a plain thread", options{},
                 notify_body());
}

TEST(ModelNotify, ControlRelaxedPermitIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "notify_add_permit";
    expect_caught("notify control: the permit's CAS relaxed", o, notify_body());
}

TEST(ModelNotify, ControlEnqueueIgnoringAStoredPermitIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "notify_enqueue_ignores_permit";
    o.max_steps = 5000;
    expect_caught("notify control: a waiter suspends although a permit is stored (lost wake)", o,
                  notify_body());
}

}  // namespace
}  // namespace blitz::model
