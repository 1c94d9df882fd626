// SPDX-License-Identifier: MIT
// Model: the watch channel (X6) with its real awaitable, in a task polled by a model worker.
// The lock-free parts: the value's sequence lock (a receiver never sees half of one send and
// half of another) and the count of linked waiters a send reads instead of taking the lock (a
// receiver that waits is always woken by the send it waits for).

#include <gtest/gtest.h>

#include <cstdint>

#include "blitz/chan/watch.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task_harness.hpp"

namespace blitz::model {
namespace {

// keep_state: the channel's state is shared through a std::shared_ptr, whose count the model
// cannot see (libstdc++'s own atomics, not the facade's), so the thread that drops the last
// reference would seem to destroy the state with no order against the other side's last
// stores (a race the model reported once a change elsewhere moved its bounded search onto that
// schedule; the count's acq_rel decrement orders them in the real program). Each scenario's
// main thread keeps a receiver until every thread joined, so the state goes after the joins,
// which the model does see.

// Two words, so a read can tear: both halves always hold the same number.
struct two_words {
    std::uint64_t a, b;
};
static_assert(detail::watch_lock_free<two_words>);

// Waits for one change and reads it; -1 for a torn value, -2 if the sender went instead.
task<long> wait_once(watch_receiver<two_words> rx) {
    if (!co_await rx.changed()) co_return -2;
    const two_words v = rx.borrow_and_update().first;
    co_return v.a == v.b ? static_cast<long>(v.a) : -1;
}

// The sender stays alive until the receiver is done, so only the send itself can wake it.
std::function<void()> one_send_wakes_the_waiter() {
    return [] {
        task_harness h;
        auto ends = watch<two_words>(two_words{0, 0});
        watch_sender<two_words>& tx = ends.first;
        const watch_receiver<two_words> keep = tx.subscribe();  // see keep_state below
        auto jh = h.spawn(wait_once(std::move(ends.second)));
        thread worker([&h] { h.run_worker(); });
        thread sender([&] { tx.send(two_words{1, 1}); });
        sender.join();
        const long got = jh.join();
        BLITZ_MODEL_CHECK(got == 1);
        h.stop();
        worker.join();
    };
}

// Two sends against a receiver reading between them: every value read is whole, and the
// receiver ends on the last one.
std::function<void()> reads_are_whole() {
    return [] {
        task_harness h;
        auto ends = watch<two_words>(two_words{0, 0});
        watch_sender<two_words>& tx = ends.first;
        const watch_receiver<two_words> keep = tx.subscribe();  // see keep_state below
        auto jh = h.spawn([](watch_receiver<two_words> rx) -> task<long> {
            long last = 0;
            while (co_await rx.changed()) {
                const two_words v = rx.borrow_and_update().first;
                if (v.a != v.b) co_return -1;
                last = static_cast<long>(v.a);
            }
            co_return last;
        }(std::move(ends.second)));
        thread worker([&h] { h.run_worker(); });
        thread sender([&] {
            tx.send(two_words{1, 1});
            tx.send(two_words{2, 2});
            auto gone = std::move(tx);
        });
        sender.join();
        const long got = jh.join();
        BLITZ_MODEL_CHECK(got == 2);
        h.stop();
        worker.join();
    };
}

TEST(ModelWatch, ASendWakesTheWaiterWithoutTheLock) {
    make_runtime_statics();
    expect_holds("watch: a send against the receiver linking itself", options{},
                 one_send_wakes_the_waiter());
}

TEST(ModelWatch, ReadsAreWholeAndTheLastValueIsSeen) {
    make_runtime_statics();
    expect_holds("watch: two sends against a reading receiver", options{}, reads_are_whole());
}

TEST(ModelWatch, ControlWaiterThatDoesNotRecheckIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "cond_link_no_recheck";
    o.max_steps = 5000;  // the receiver never runs again: the worker idles until the limit
    expect_caught("watch control: a waiter links without checking the condition again", o,
                  one_send_wakes_the_waiter());
}

TEST(ModelWatch, ControlReaderThatDoesNotRecheckTheSequenceIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "watch_read_no_recheck";
    expect_caught("watch control: a read that does not check the sequence again", o,
                  reads_are_whole());
}

}  // namespace
}  // namespace blitz::model
