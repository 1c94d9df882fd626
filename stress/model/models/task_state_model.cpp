// SPDX-License-Identifier: MIT
// Model: the task state word (K1-K5). Wakes racing a poll are never lost (a wake that lands
// while the task runs makes it run again, and that poll sees the waker's writes); a task is in
// at most one queue entry and run by one runner at a time; reference counts are exact (the
// block is freed once, by the last holder, after completion, join and wakers in any order); an
// abort is deferred by a cancel shield, never lost; a join waiter that withdraws is either
// woken or withdrawn, never both and never neither.

#include <gtest/gtest.h>

#include <coroutine>
#include <cstdlib>
#include <vector>

#include "blitz/cancel.hpp"
#include "blitz/chan/oneshot.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task/alloc_stats.hpp"
#include "task/schedule.hpp"
#include "task_harness.hpp"

namespace blitz::model {
namespace {

using detail::task_header;
namespace st = detail::state;

// The queue of the model: entries created by wakes, taken by the runner.
struct model_scheduler final : detail::task_scheduler {
    atomic<int> entries{0};
    void spawn(task_header*) noexcept override { entries.fetch_add(1, std::memory_order_acq_rel); }
    void schedule(task_header*, bool) noexcept override {
        entries.fetch_add(1, std::memory_order_acq_rel);
    }
    void list(task_header*) noexcept override {}  // no task lists here
    released release(task_header*) noexcept override { return released::unlisted; }
    void hand_back(task_header*) noexcept override {}  // no task lists here: never called
    void unhandled_exception(task_header*) noexcept override {}
};

// A coroutine that never finishes: each poll resumes it and it suspends again at once.
// (The harness polls it itself, so the suspension need not go through blitz: it says it does.)
struct model_suspend : std::suspend_always {
    using blitz_awaitable = void;
};
blitz::task<void> never_done() {
    for (;;) co_await model_suspend{};
}

// A fresh spawned header in a heap block the last reference frees (release_block), in front of
// a real frame (the header finds its root there).
task_header* spawn_header_on(detail::task_scheduler& s) {
    const std::coroutine_handle<> root = never_done().release();
    task_header* h = detail::header_of_frame(root.address());
    h->init_spawned(&s, root);
    return h;
}
task_header* spawn_header(model_scheduler& s) { return spawn_header_on(s); }

// One poll: take the queue entry, run, look at what the wakers wrote, finish the poll.
// Returns whether the task was rescheduled (its entry kept).
bool poll_once(task_header* h, const std::vector<atomic<int>*>& data, std::vector<int>& seen) {
    BLITZ_MODEL_CHECK(st::lifecycle_of(h->load_state()) == st::lifecycle::scheduled);  // K4
    h->transition_to_running();
    for (std::size_t i = 0; i < data.size(); ++i)
        seen[i] = data[i]->load(std::memory_order_relaxed);
    return h->transition_after_poll() == task_header::after_poll::rescheduled;
}

// `wakers` threads each write their datum and wake the task (consuming a waker reference);
// the runner polls while it has entries. Afterwards the last poll must have seen every datum.
std::function<void()> wake_body(int wakers, bool fault_enqueue_running) {
    return [=] {
        model_scheduler s;
        task_header* h = spawn_header(s);  // SCHEDULED, one entry: the spawn's
        s.entries.store(1, std::memory_order_relaxed);
        std::vector<atomic<int>*> data;
        for (int i = 0; i < wakers; ++i) data.push_back(new atomic<int>(0));
        std::vector<int> seen(static_cast<std::size_t>(wakers), 0);
        std::vector<std::unique_ptr<thread>> ts;
        for (int i = 0; i < wakers; ++i) {
            auto& datum = *data[static_cast<std::size_t>(i)];
            if (fault_enqueue_running) {
                // K2's negative control: a wake that enqueues the task even while it runs.
                h->ref();  // the wake's reference, taken before it races the poll
                ts.push_back(std::make_unique<thread>([&datum, h] {
                    datum.store(1, std::memory_order_relaxed);
                    if (h->transition_to_scheduled(true, true)) h->scheduler()->schedule(h, false);
                }));
            } else {
                blitz::waker w = h->make_waker();  // taken before the wake races the poll
                ts.push_back(std::make_unique<thread>([&datum, w = std::move(w)]() mutable {
                    datum.store(1, std::memory_order_relaxed);
                    std::move(w).wake();
                }));
            }
        }
        // The runner: the spawn's entry, then whatever the wakes create.
        auto run_entries = [&] {
            while (s.entries.load(std::memory_order_acquire) > 0) {
                s.entries.fetch_sub(1, std::memory_order_acq_rel);
                while (poll_once(h, data, seen)) {
                }
            }
        };
        thread runner(run_entries);
        for (auto& t : ts) t->join();
        runner.join();
        run_entries();  // entries created after the runner stopped looking
        for (int i = 0; i < wakers; ++i) BLITZ_MODEL_CHECK(seen[static_cast<std::size_t>(i)] == 1);
        const auto state = h->load_state();
        BLITZ_MODEL_CHECK(st::lifecycle_of(state) == st::lifecycle::idle);
        BLITZ_MODEL_CHECK(st::refs_of(state) == 2);  // handle and list: every waker's is gone
        for (auto* d : data) delete d;
        h->unref(2);
    };
}

TEST(ModelTaskState, WakesRacingAPollAreNeverLost) {
    make_runtime_statics();
    expect_holds("task state: two wakes racing the poll", options{}, wake_body(2, false));
}

TEST(ModelTaskState, ControlEnqueueingARunningTaskIsCaught) {
    make_runtime_statics();
    expect_caught("task state control: a wake enqueues a running task", options{},
                  wake_body(1, true));
}

TEST(ModelTaskState, ControlRelaxedWakeIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "task_wake";
    expect_caught("task state control: the wake's transition relaxed", o, wake_body(1, false));
}

// Completion, the join side and a waker race; the block is freed exactly once, last. With
// `detach` the handle detaches (its interest and its reference in one RMW) instead of dropping.
std::function<void()> refs_body(bool detach = false) {
    return [detach] {
        model_scheduler s;
        task_header* h = spawn_header(s);
        const auto frees_before = detail::alloc_stats::read().frees;
        blitz::waker w = h->make_waker();
        thread completer([&] {
            h->transition_to_running();
            h->complete(false, 2);  // the queue entry's and the list's references
        });
        thread joiner([&] {
            if (detach) {
                h->detach_handle();
            } else {
                h->drop_handle(true);
            }
        });
        thread waker_thread([&, w = std::move(w)]() mutable { std::move(w).wake(); });
        completer.join();
        joiner.join();
        waker_thread.join();
        BLITZ_MODEL_CHECK(detail::alloc_stats::read().frees == frees_before + 1);
    };
}

TEST(ModelTaskState, TheLastReferenceFreesTheBlockOnce) {
    make_runtime_statics();
    expect_holds("task state: complete, drop handle and wake race", options{}, refs_body());
}

TEST(ModelTaskState, ADetachRacingCompletionFreesTheBlockOnce) {
    make_runtime_statics();
    expect_holds("task state: complete, detach and wake race", options{}, refs_body(true));
}

// The runtime's scheduler: a task in no list is the completer's whole (release says mine).
struct listing_scheduler final : detail::task_scheduler {
    listing_scheduler() noexcept : task_scheduler(/*unlisted_are_mine=*/true) {}
    void spawn(task_header*) noexcept override {}
    void schedule(task_header*, bool) noexcept override {}
    void list(task_header*) noexcept override {}
    released release(task_header*) noexcept override { return released::mine; }
    void hand_back(task_header*) noexcept override {}  // never listed here: never called
    void unhandled_exception(task_header*) noexcept override {}
};

// A task that finished its first poll takes complete()'s short form, which frees the block
// without publishing COMPLETE when the runner's two references are the only ones left, while
// its handle detaches and a waker is dropped on other threads: the block is freed exactly once,
// by whichever drops the last reference. The control frees it whatever the count says.
std::function<void()> unshared_body() {
    return [] {
        listing_scheduler s;
        task_header* h = spawn_header_on(s);
        const auto frees_before = detail::alloc_stats::read().frees;
        blitz::waker w = h->make_waker();
        thread completer([&] {
            h->transition_to_running();
            if (!h->complete_unshared()) h->complete(false, 1);  // poll's order
        });
        thread joiner([&] { h->detach_handle(); });
        thread waker_thread([&, w = std::move(w)]() mutable { w.reset(); });
        completer.join();
        joiner.join();
        waker_thread.join();
        BLITZ_MODEL_CHECK(detail::alloc_stats::read().frees == frees_before + 1);
    };
}

TEST(ModelTaskState, ACompletionNobodyElseHoldsFreesTheBlockOnce) {
    make_runtime_statics();
    expect_holds("task state: unshared completion, detach and a waker's drop race", options{},
                 unshared_body());
}

// The explorer runs a failing execution to its end, where the control frees the block a second
// time (into this thread's block cache, which would then hand it out twice), so the control
// runs in a child process of its own and reports by its exit code.
TEST(ModelTaskState, ControlUnsharedCompletionIgnoringReferencesIsCaught) {
    EXPECT_EXIT(
        {
            make_runtime_statics();
            options o;
            o.weaken = "complete_unshared_ignores_refs";
            expect_caught("task state control: the short completion frees a block others hold", o,
                          unshared_body());
            std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "");
}

// An abort races a wake and the polls (K4): the cancellation is never lost (the task ends
// COMPLETE and cancelled, whichever of the three moves first), the task is completed once, and
// every reference a wake or the abort took is given back. `skip_enqueue` is the control: an
// abort that sets the flag but does not enqueue the IDLE task it found (one step left out).
std::function<void()> abort_body(bool skip_enqueue) {
    return [=] {
        model_scheduler s;
        task_header* h = spawn_header(s);  // SCHEDULED, one entry: the spawn's
        s.entries.store(1, std::memory_order_relaxed);
        int completions = 0;
        auto run_entries = [&] {
            while (s.entries.load(std::memory_order_acquire) > 0) {
                s.entries.fetch_sub(1, std::memory_order_acq_rel);
                for (;;) {
                    bool stray = false;
                    const auto out = h->poll(-1, false, stray);
                    if (out == task_header::poll_outcome::completed) ++completions;
                    if (out != task_header::poll_outcome::rescheduled) break;
                }
            }
        };
        blitz::waker w = h->make_waker();  // taken before the wake races the abort and the poll
        thread runner(run_entries);
        thread aborter([&] {
            if (skip_enqueue) {
                (void)h->request_cancel();
            } else {
                detail::abort_task(h);
            }
        });
        thread waker_thread([&, w = std::move(w)]() mutable { std::move(w).wake(); });
        runner.join();
        aborter.join();
        waker_thread.join();
        run_entries();  // entries created after the runner stopped looking
        const auto state = h->load_state();
        BLITZ_MODEL_CHECK(st::lifecycle_of(state) == st::lifecycle::complete);
        BLITZ_MODEL_CHECK(h->is_cancelled_result());
        BLITZ_MODEL_CHECK(completions == 1);
        BLITZ_MODEL_CHECK(st::refs_of(state) == 2);  // handle and list: the entries' are gone
        h->unref(2);
    };
}

TEST(ModelTaskState, AnAbortRacingAWakeAndThePollIsNeverLost) {
    make_runtime_statics();
    expect_holds("task state: abort, wake and poll race", options{}, abort_body(false));
}

TEST(ModelTaskState, ControlAnAbortThatDoesNotEnqueueIsCaught) {
    make_runtime_statics();
    expect_caught("task state control: the abort leaves an idle task unqueued", options{},
                  abort_body(true));
}

// The task dump's claim (issue 46, task_header::try_claim_idle): an inspector takes an IDLE
// task as a runner would, reads it, and releases it, racing a wake, an abort and the runner.
// While it holds the claim nobody polls the task (a runner and the inspector never hold it at
// once); a wake or abort that lands meanwhile reschedules it at the release, so the abort
// still completes the task exactly once and every reference comes back. `drop_reschedule` is
// the control: the release ignores that it must queue the task, and the abort is lost.
std::function<void()> claim_body(bool drop_reschedule) {
    return [=] {
        model_scheduler s;
        task_header* h = spawn_header(s);  // SCHEDULED, one entry: the spawn's
        s.entries.store(1, std::memory_order_relaxed);
        atomic<int> holders{0};  // runners and inspectors inside the task right now
        int completions = 0;
        auto hold = [&] {
            BLITZ_MODEL_CHECK(holders.fetch_add(1, std::memory_order_acq_rel) == 0);
            holders.fetch_sub(1, std::memory_order_acq_rel);
        };
        auto run_entries = [&] {
            while (s.entries.load(std::memory_order_acquire) > 0) {
                s.entries.fetch_sub(1, std::memory_order_acq_rel);
                for (;;) {
                    const std::uint64_t st0 = h->transition_to_running();
                    if (st::cancel_due(st0)) {
                        hold();
                        h->complete(/*cancelled=*/true, 1);
                        ++completions;
                        break;
                    }
                    hold();
                    if (h->transition_after_poll() != task_header::after_poll::rescheduled) break;
                }
            }
        };
        blitz::waker w = h->make_waker();
        thread runner(run_entries);
        thread inspector([&] {
            for (int i = 0; i < 2; ++i) {
                if (!h->try_claim_idle()) continue;
                hold();
                const bool again =
                    h->transition_after_poll() == task_header::after_poll::rescheduled;
                if (again && !drop_reschedule) h->scheduler()->schedule(h, false);
            }
        });
        thread aborter([&] { detail::abort_task(h); });
        thread waker_thread([&, w = std::move(w)]() mutable { std::move(w).wake(); });
        runner.join();
        inspector.join();
        aborter.join();
        waker_thread.join();
        run_entries();  // entries created after the runner stopped looking
        const auto state = h->load_state();
        BLITZ_MODEL_CHECK(st::lifecycle_of(state) == st::lifecycle::complete);
        BLITZ_MODEL_CHECK(completions == 1);
        BLITZ_MODEL_CHECK(st::refs_of(state) == 2);  // handle and list: the entries' are gone
        h->unref(2);
    };
}

TEST(ModelTaskState, ADumpClaimRacingWakeAbortAndPollLosesNothing) {
    make_runtime_statics();
    expect_holds("task state: dump claim, wake, abort and poll race", options{}, claim_body(false));
}

TEST(ModelTaskState, ControlAClaimThatDropsTheRescheduleIsCaught) {
    make_runtime_statics();
    expect_caught("task state control: the dump's release drops a wake or abort", options{},
                  claim_body(true));
}

// K4 with a cancel_shield, in a real task polled by a model worker: an abort that arrives while
// the task waits inside a shielded section is deferred, not lost. The shielded wait completes
// with its value, and the task ends cancelled at its first suspension after the shield goes
// (it then waits on a receiver whose sender stays alive, so only the abort can end it).
task<int> shielded_then_wait(oneshot_receiver<int> first, oneshot_receiver<int> never,
                             bool& entered, int& got) {
    {
        cancel_shield shield;
        entered = true;
        auto v = co_await first;
        got = v ? *v : -1;
    }
    auto w = co_await never;
    co_return w ? *w : 0;
}

std::function<void()> shield_body(bool ignore_shield) {
    return [=] {
        bool entered = false, cancelled = false;
        int got = 0;
        {
            task_harness h;
            h.ignore_shield = ignore_shield;
            auto first = oneshot<int>();
            auto never = oneshot<int>();
            auto jh = h.spawn(
                shielded_then_wait(std::move(first.second), std::move(never.second), entered, got));
            thread worker([&h] { h.run_worker(); });
            oneshot_sender<int>& tx = first.first;
            thread sender([&tx] { (void)std::move(tx).send(7); });
            jh.abort();  // races the first poll, the shielded wait and the send
            sender.join();
            cancelled = !join_unless_cancelled(jh).has_value();
            h.stop();
            worker.join();
        }
        BLITZ_MODEL_CHECK(cancelled);  // the abort is never lost
        // Aborted before its first poll, the task never entered the shield; once inside, the
        // shielded wait ran to its value.
        BLITZ_MODEL_CHECK(!entered || got == 7);
    };
}

TEST(ModelTaskState, AnAbortWaitsForTheShieldAndIsNeverLost) {
    make_runtime_statics();
    expect_holds("task state: abort against a shielded wait", options{}, shield_body(false));
}

TEST(ModelTaskState, ControlPollIgnoringTheShieldIsCaught) {
    make_runtime_statics();
    expect_caught("task state control: the poll cancels a shielded task (K4)", options{},
                  shield_body(true));
}

// K5: a join waiter registers its waker, then withdraws it (a timeout or a losing select branch
// around the join), racing the task's completion. Exactly one of three things happens: the
// task was already complete (no waker stored), the waiter withdrew it (no wake ever comes), or
// the completer took it and wakes it exactly once. The waker's references all go back.
struct counting_waker {
    atomic<int> wakes{0};
    atomic<int> refs{0};
    static void wake(void* p) noexcept {
        wake_by_ref(p);
        drop(p);
    }
    static void wake_by_ref(void* p) noexcept {
        static_cast<counting_waker*>(p)->wakes.fetch_add(1, std::memory_order_acq_rel);
    }
    static void* clone(void* p) noexcept {
        static_cast<counting_waker*>(p)->refs.fetch_add(1, std::memory_order_relaxed);
        return p;
    }
    static void drop(void* p) noexcept {
        static_cast<counting_waker*>(p)->refs.fetch_sub(1, std::memory_order_acq_rel);
    }
    waker make() {
        refs.fetch_add(1, std::memory_order_relaxed);
        return waker(this, &vtable);
    }
    static constexpr waker_vtable vtable{&wake, &wake_by_ref, &clone, &drop};
};

std::function<void()> join_withdraw_body() {
    return [] {
        model_scheduler s;
        task_header* h = spawn_header(s);
        counting_waker cw;
        bool stored = false, withdrawn = false;
        thread completer([&] {
            h->transition_to_running();
            h->complete(false, 1);  // the queue entry's reference
        });
        thread joiner([&] {
            stored = h->set_join_waker(cw.make());
            if (stored) withdrawn = h->unset_join_waker();
        });
        completer.join();
        joiner.join();
        const int wakes = cw.wakes.load(std::memory_order_acquire);
        BLITZ_MODEL_CHECK(wakes == (stored && !withdrawn ? 1 : 0));
        BLITZ_MODEL_CHECK(cw.refs.load(std::memory_order_acquire) == 0);
        BLITZ_MODEL_CHECK(st::lifecycle_of(h->load_state()) == st::lifecycle::complete);
        h->drop_handle(true);
        h->unref();  // the list's reference: frees the block
    };
}

TEST(ModelTaskState, AJoinWaiterIsWokenOrWithdrawnNeverBoth) {
    make_runtime_statics();
    expect_holds("task state: a join waiter withdrawing against completion", options{},
                 join_withdraw_body());
}

// Completion publishes COMPLETE and drops its references in one RMW only when no join waker
// is registered; the control drops them regardless (and so may not touch the waker after).
TEST(ModelTaskState, ControlCompletionDroppingReferencesPastAJoinWakerIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "complete_drops_with_waker";
    expect_caught("task state control: completion drops its references past a join waker", o,
                  join_withdraw_body());
}

TEST(ModelTaskState, ControlWithdrawalIgnoringCompletionIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "join_withdraw_after_complete";
    expect_caught("task state control: a join waiter withdraws what the completer took", o,
                  join_withdraw_body());
}

}  // namespace
}  // namespace blitz::model
