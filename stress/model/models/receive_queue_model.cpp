// SPDX-License-Identifier: MIT
// Model: a descriptor's receive_queue against a reader about to wait (issue 44; io/receive_queue
// and scheduled_io::wait). The driver keeps bytes an abandoned receive got late, then wakes the
// descriptor's readers; a reader takes what is queued, and when it finds nothing links a waiter,
// whose wait() refuses to link while the queue holds anything (it reads the queue's counts
// without the queue's lock). Whatever the interleaving: the reader ends with the bytes, or it is
// woken, never asleep with bytes queued.

#include <gtest/gtest.h>

#include "blitz/detail/wait_list.hpp"
#include "io/scheduled_io.hpp"
#include "model.hpp"
#include "model_report.hpp"

namespace blitz::model {
namespace {

// `wake` false is the control: the driver queues the bytes but never wakes the readers.
std::function<void()> receive_queue_body(bool wake) {
    return [=] {
        detail::scheduled_io s(-1);
        detail::wait_node node;
        bool got = false, linked = false;
        thread reader([&] {
            for (int i = 0; i < 2; ++i) {
                char c = 0;
                if (s.received().take(&c, 1) == 1) {
                    got = true;
                    return;
                }
                if (s.wait(detail::io_direction::read, node, waker{})) {
                    linked = true;
                    return;
                }
            }
        });
        thread driver([&] {
            const std::byte b{'x'};
            s.received().keep(&b, 1);
            if (wake) s.wake_readers();
        });
        reader.join();
        driver.join();
        if (linked) {
            const bool woken = node.done.load(std::memory_order_acquire);
            if (!woken) s.cancel_wait(node);
            BLITZ_MODEL_CHECK(woken || s.received().bytes() == 0);
        } else {
            BLITZ_MODEL_CHECK(got || s.received().bytes() != 0);
        }
    };
}

TEST(ModelReceiveQueue, AReaderNeverSleepsWithBytesQueued) {
    options o;
    o.preemption_bound = -1;
    expect_holds("receive queue: keep and wake against take and wait", o, receive_queue_body(true));
}

TEST(ModelReceiveQueue, ControlBytesQueuedWithoutAWakeAreCaught) {
    expect_caught("receive queue control: the driver never wakes the readers", options{},
                  receive_queue_body(false));
}

TEST(ModelReceiveQueue, ControlAWaitBlindToTheQueueIsCaught) {
    options o;
    o.weaken = "wait_ignores_received";
    expect_caught("receive queue control: wait() links with bytes queued", o,
                  receive_queue_body(true));
}

}  // namespace
}  // namespace blitz::model
