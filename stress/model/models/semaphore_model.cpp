// SPDX-License-Identifier: MIT
// Model: the semaphore (X2) with its real awaitable: tasks acquiring through the wait queue, a
// plain thread on the lock-free try_acquire/release path, and an abort of a waiting task. The
// permits are never duplicated (at most one holder of the one permit) nor lost (all back at
// the end, the queue empty).

#include <gtest/gtest.h>

#include "blitz/sync/semaphore.hpp"
#include "blitz/testing.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "blitz/yield.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task/alloc_stats.hpp"
#include "task_harness.hpp"

namespace blitz::model {
namespace {

struct shared {
    semaphore sem{1};
    int holders = 0;  // fibers run one at a time: plain is fine
    bool doubled = false;
    void enter() {
        if (++holders > 1) doubled = true;
    }
    void leave() { --holders; }
};

// Counts a holder for as long as the permit is held, also when an abort ends the task while it
// holds (the frame's destruction releases the permit and this together).
struct holding {
    shared& s;
    explicit holding(shared& x) : s(x) { s.enter(); }
    ~holding() { s.leave(); }
    holding(const holding&) = delete;
    holding& operator=(const holding&) = delete;
};

task<void> hold_once(shared& s) {
    auto p = co_await s.sem.acquire(1);
    holding h(s);
    co_await yield_now();  // hold the permit across a suspension
}

// Two tasks acquire through the wait queue; with `plain`, a plain thread also takes the
// lock-free try_acquire path; with `abort_one`, the second task is aborted meanwhile.
std::function<void()> semaphore_body(bool plain_thread, bool abort_one,
                                     testing::semaphore_faults faults) {
    return [=] {
        shared s;
        testing::set_faults(s.sem, faults);
        task_harness h;
        auto a = h.spawn(hold_once(s));
        auto b = h.spawn(hold_once(s));
        thread worker([&h] { h.run_worker(); });
        thread plain([&s, plain_thread] {
            if (!plain_thread) return;
            if (auto p = s.sem.try_acquire(1)) holding held(s);
        });
        if (abort_one) b.abort();
        plain.join();
        a.join();
        try {
            b.join();
        } catch (const task_cancelled&) {
        }
        h.stop();
        worker.join();
        BLITZ_MODEL_CHECK(!s.doubled);              // never two holders of one permit
        BLITZ_MODEL_CHECK(s.sem.available() == 1);  // and the permit is back
        BLITZ_MODEL_CHECK(s.sem.waiters() == 0);
    };
}

TEST(ModelSemaphore, TwoWaitersAndTheLockFreePathShareOnePermit) {
    make_runtime_statics();
    expect_holds("semaphore: two waiting tasks and a try_acquire on one permit", options{},
                 semaphore_body(true, false, {}));
}

TEST(ModelSemaphore, AnAbortedWaiterGivesItsGrantBack) {
    make_runtime_statics();
    expect_holds("semaphore: two waiting tasks, one aborted", options{},
                 semaphore_body(false, true, {}));
}

TEST(ModelSemaphore, ControlLostAbandonedGrantIsCaught) {
    make_runtime_statics();
    testing::semaphore_faults f;
    f.lose_abandoned_grant = true;
    options o;
    o.max_steps = 5000;
    expect_caught("semaphore control: an aborted waiter's grant is lost", o,
                  semaphore_body(false, true, f));
}

}  // namespace
}  // namespace blitz::model
