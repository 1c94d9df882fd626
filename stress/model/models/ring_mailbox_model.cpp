// SPDX-License-Identifier: MIT
// Model: a worker ring's mailbox (issue 44; io/ring_mailbox.hpp, io/worker_rings.cpp). Two
// threads post a cancel each and then wake the ring's owner; the owner looks at the mailbox,
// and when it found nothing new sleeps until a wake. Every entry is taken exactly once and the
// owner never sleeps for good with an entry in the mailbox.
//
// The ring's wake is modelled by a counter the owner sleeps on (a futex of the model: its wait
// is the owner's io_uring_enter); the ring's own wake protocol is ring_park_model's. The mailbox
// is the runtime's own class, mutex and flag included.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "io/ring_mailbox.hpp"
#include "model.hpp"
#include "model_report.hpp"

namespace blitz::model {
namespace {

constexpr auto mailbox_forever = std::chrono::nanoseconds(std::chrono::hours(1));

std::function<void()> mailbox_body() {
    return [] {
        detail::ring_mailbox box;
        atomic<std::uint32_t> wakes{0};  // the ring's eventfd: posted wakes
        auto poster = [&](std::uint64_t ud) {
            box.post(ud);
            // release: the post before the owner that sees the wake
            wakes.fetch_add(1, std::memory_order_release);
            detail::futex_wake_one(wakes);
        };
        thread a([&] { poster(1); });
        thread b([&] { poster(2); });
        std::vector<std::uint64_t> taken, got;
        while (got.size() < 2) {
            // The owner reads the ring before it looks, so a wake after the look ends its sleep.
            const std::uint32_t seen = wakes.load(std::memory_order_acquire);
            if (box.take(taken)) got.insert(got.end(), taken.begin(), taken.end());
            if (got.size() == 2) break;
            detail::futex_wait(wakes, seen, mailbox_forever);  // sleeps in its ring
        }
        a.join();
        b.join();
        BLITZ_MODEL_CHECK(got.size() == 2 && got[0] != got[1]);
        BLITZ_MODEL_CHECK(!box.take(taken) || taken.empty());  // nothing left, nothing twice
    };
}

TEST(ModelRingMailbox, EveryPostedCancelIsTakenOnceAndNoneWaitsBehindASleep) {
    expect_holds("ring mailbox: two posters against the owner's look and sleep", untimed(),
                 mailbox_body());
}

TEST(ModelRingMailbox, ControlFlagSetBeforeTheEntryIsCaught) {
    options o = untimed();
    o.weaken = "mailbox_flag_first";
    expect_caught("ring mailbox control: has_mail set before the entry is in", o, mailbox_body());
}

TEST(ModelRingMailbox, ControlFlagClearedAfterTheMutexIsCaught) {
    options o = untimed();
    o.weaken = "mailbox_clear_after_unlock";
    expect_caught("ring mailbox control: has_mail cleared after the mutex is released", o,
                  mailbox_body());
}

}  // namespace
}  // namespace blitz::model
