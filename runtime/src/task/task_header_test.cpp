// SPDX-License-Identifier: MIT
// The task state word (K1) and its transitions (K2, K4, K5), driven directly on a header.

#include "blitz/detail/task_header.hpp"

#include <gtest/gtest.h>

namespace blitz::detail {
namespace {

using namespace state;

class StateWord : public ::testing::Test {
protected:
    // A header in the post-spawn state (3 references, SCHEDULED). Tests keep at least one
    // reference so nothing is freed: the header lives on the stack.
    void SetUp() override { h.init_spawned(nullptr, std::noop_coroutine()); }
    std::uint64_t s() const { return h.load_state(); }
    task_header h;
};

TEST(StateLayout, FieldsSitWhereTheLayoutSays) {
    EXPECT_EQ(ref_one, 1ull << 40);
    EXPECT_EQ(shield_one, 1ull << 32);
    EXPECT_EQ(notified, 1ull << 24);
    EXPECT_EQ(cancelled, 1ull << 25);
    EXPECT_EQ(join_interest, 1ull << 26);
    EXPECT_EQ(detached, 1ull << 27);
    EXPECT_EQ(lifecycle_bits(lifecycle::complete), 3ull << 16);
    EXPECT_EQ(refs_of(max_refs * ref_one), max_refs);
}

TEST_F(StateWord, SpawnStartsScheduledWithThreeReferencesAndJoinInterest) {
    EXPECT_EQ(lifecycle_of(s()), lifecycle::scheduled);
    EXPECT_EQ(refs_of(s()), 3u);
    EXPECT_TRUE(s() & join_interest);
}

TEST_F(StateWord, WakeOfScheduledSetsNotifiedWithoutASecondEntry) {
    EXPECT_FALSE(h.transition_to_scheduled(false));
    EXPECT_TRUE(s() & notified);
    EXPECT_EQ(refs_of(s()), 3u);
    // Running clears it: the wake is satisfied by this very poll.
    h.transition_to_running();
    EXPECT_FALSE(s() & notified);
}

TEST_F(StateWord, PendingPollWithoutWakeGoesIdleAndDropsTheQueueReference) {
    h.transition_to_running();
    EXPECT_EQ(h.transition_after_poll(), task_header::after_poll::idle);
    EXPECT_EQ(lifecycle_of(s()), lifecycle::idle);
    EXPECT_EQ(refs_of(s()), 2u);
}

TEST_F(StateWord, WakeWhileRunningReschedulesAfterThePoll) {
    h.transition_to_running();
    EXPECT_FALSE(h.transition_to_scheduled(false));  // sets notified only
    EXPECT_TRUE(s() & notified);
    EXPECT_EQ(h.transition_after_poll(), task_header::after_poll::rescheduled);
    EXPECT_EQ(lifecycle_of(s()), lifecycle::scheduled);
    EXPECT_FALSE(s() & notified);
    EXPECT_EQ(refs_of(s()), 3u);  // the queue reference moves to the new entry
}

TEST_F(StateWord, AYieldReschedulesAfterThePollWithoutNotified) {
    h.transition_to_running();
    const std::uint64_t running = s();
    EXPECT_EQ(h.transition_after_poll(/*yielded=*/true), task_header::after_poll::rescheduled);
    EXPECT_EQ(lifecycle_of(s()), lifecycle::scheduled);
    EXPECT_FALSE(s() & notified);
    EXPECT_EQ(refs_of(s()), refs_of(running));  // the queue reference moves to the new entry
}

TEST_F(StateWord, AYieldThatMeetsAWakeMakesOneQueueEntry) {
    h.transition_to_running();
    EXPECT_FALSE(h.transition_to_scheduled(false));  // a wake during the poll: notified only
    EXPECT_EQ(h.transition_after_poll(/*yielded=*/true), task_header::after_poll::rescheduled);
    EXPECT_FALSE(s() & notified);  // one entry serves both
    EXPECT_EQ(refs_of(s()), 3u);
}

TEST_F(StateWord, WakeOfIdleSchedulesExactlyOnce) {
    h.transition_to_running();
    h.transition_after_poll();                       // idle, 2 refs
    EXPECT_TRUE(h.transition_to_scheduled(false));   // creates the entry: +1 ref
    EXPECT_FALSE(h.transition_to_scheduled(false));  // already scheduled: notified only
    EXPECT_EQ(refs_of(s()), 3u);
    EXPECT_EQ(lifecycle_of(s()), lifecycle::scheduled);
}

TEST_F(StateWord, ConsumingWakeHandsOverOrDropsTheWakersReference) {
    h.transition_to_running();
    h.transition_after_poll();                     // idle, 2 refs
    h.ref();                                       // a waker's reference: 3
    EXPECT_TRUE(h.transition_to_scheduled(true));  // handed to the queue entry
    EXPECT_EQ(refs_of(s()), 3u);
    h.ref();                                        // another waker: 4
    EXPECT_FALSE(h.transition_to_scheduled(true));  // already scheduled: dropped
    EXPECT_EQ(refs_of(s()), 3u);
}

TEST_F(StateWord, WakeOfCompleteIsIgnored) {
    h.transition_to_running();
    h.transition_to_complete(false);
    EXPECT_FALSE(h.transition_to_scheduled(false));
    EXPECT_EQ(lifecycle_of(s()), lifecycle::complete);
    EXPECT_FALSE(s() & notified);
}

TEST_F(StateWord, CancelOfIdleSchedulesItWithAQueueReference) {
    h.transition_to_running();
    h.transition_after_poll();  // idle, 2 refs
    EXPECT_TRUE(h.request_cancel());
    EXPECT_EQ(lifecycle_of(s()), lifecycle::scheduled);
    EXPECT_TRUE(cancel_due(s()));
    EXPECT_EQ(refs_of(s()), 3u);
    EXPECT_FALSE(h.request_cancel());  // once scheduled, only the flag
}

TEST_F(StateWord, ShieldDefersCancellation) {
    h.transition_to_running();
    ASSERT_TRUE(h.shield_push());
    h.request_cancel();
    EXPECT_FALSE(cancel_due(s()));
    EXPECT_EQ(h.transition_after_poll(), task_header::after_poll::idle);  // not rescheduled
    h.shield_pop();
    EXPECT_TRUE(cancel_due(s()));
}

TEST_F(StateWord, CancelAfterCompletionHasNoEffect) {
    h.transition_to_running();
    h.transition_to_complete(false);
    EXPECT_FALSE(h.request_cancel());
    EXPECT_FALSE(h.is_cancelled_result());
}

// A waker over an int that counts its wakes (clone and drop do nothing).
constexpr waker_vtable counting_vt{[](void* p) { ++*static_cast<int*>(p); },
                                   [](void* p) { ++*static_cast<int*>(p); },
                                   [](void* p) -> void* { return p; }, [](void*) {}};

TEST_F(StateWord, JoinWakerIsWokenByCompletionOrWithdrawn) {
    int wakes = 0;
    EXPECT_TRUE(h.set_join_waker(waker(&wakes, &counting_vt)));
    EXPECT_TRUE(s() & join_waker);
    EXPECT_TRUE(h.unset_join_waker());  // withdrawn before completion
    EXPECT_TRUE(h.set_join_waker(waker(&wakes, &counting_vt)));
    h.transition_to_running();
    auto prev = h.transition_to_complete(false);
    EXPECT_FALSE(h.unset_join_waker());  // the completer owns it now
    h.wake_join_waiter(prev);
    EXPECT_EQ(wakes, 1);
    EXPECT_FALSE(h.set_join_waker(waker(&wakes, &counting_vt)));  // complete: nothing to wait for
}

TEST_F(StateWord, DetachClearsJoinInterestAndDropsTheHandlesReference) {
    const std::uint64_t before = s();
    h.detach_handle();
    EXPECT_TRUE(s() & detached);
    EXPECT_FALSE(s() & join_interest);
    EXPECT_EQ(refs_of(s()), 2u);
    // Nothing else moved: lifecycle, the other flags and the shield depth.
    EXPECT_EQ(s() & ~(ref_mask | join_interest | detached), before & ~(ref_mask | join_interest));
}

TEST_F(StateWord, DetachKeepsARegisteredJoinWakerAndTheShield) {
    int wakes = 0;
    ASSERT_TRUE(h.set_join_waker(waker(&wakes, &counting_vt)));
    ASSERT_TRUE(h.shield_push());
    h.detach_handle();
    EXPECT_TRUE(s() & join_waker);
    EXPECT_EQ(shield_of(s()), 1u);
    EXPECT_EQ(refs_of(s()), 2u);
    h.shield_pop();
    EXPECT_TRUE(h.unset_join_waker());
}

}  // namespace
}  // namespace blitz::detail

namespace blitz::detail {
namespace {

// The task waker (clone, wake, wake_by_ref, drop) moves references exactly as K2/K3 require.
TEST_F(StateWord, WakerClonesAndDropsReferences) {
    h.transition_to_running();
    h.transition_after_poll();  // idle, 2 refs
    {
        waker w = h.make_waker();
        EXPECT_EQ(refs_of(s()), 3u);
        waker c = w;  // clone
        EXPECT_EQ(refs_of(s()), 4u);
        EXPECT_TRUE(c.will_wake(w));
    }  // both dropped
    EXPECT_EQ(refs_of(s()), 2u);
}

TEST_F(StateWord, WakeByRefOfARunningTaskOnlyNotifiesAndKeepsTheWaker) {
    waker w = h.make_waker();  // 4 refs (scheduled)
    h.transition_to_running();
    w.wake_by_ref();  // running: sets notified, no queue entry, so no scheduler is touched
    EXPECT_TRUE(s() & notified);
    EXPECT_TRUE(static_cast<bool>(w));
    EXPECT_EQ(refs_of(s()), 4u);
    std::move(w).wake();                 // consumes: running, so the waker's reference is dropped
    EXPECT_FALSE(static_cast<bool>(w));  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_EQ(refs_of(s()), 3u);
}

}  // namespace
}  // namespace blitz::detail
