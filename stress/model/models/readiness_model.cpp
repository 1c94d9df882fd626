// SPDX-License-Identifier: MIT
// Model: a descriptor's readiness word and its waiters (scheduled_io, O16; issue 44). A reader
// looks at the readiness, makes its syscall (here: takes the socket's byte if one has arrived),
// clears its bit on "EAGAIN" with the event count it read before the syscall, and waits. The
// driver delivers the edge of a byte that arrives: the kernel first holds the byte, then the
// driver sets the bit and wakes the waiters. Whatever the interleaving, the reader ends with
// the byte or is woken: it never sleeps with the byte in the socket and no edge to come
// (edge-triggered epoll reports each arrival once). The socket is a model atomic standing for
// the kernel's buffer.

#include <gtest/gtest.h>

#include "blitz/detail/wait_list.hpp"
#include "io/scheduled_io.hpp"
#include "model.hpp"
#include "model_report.hpp"

// scheduled_io.cpp's runtime negative control (O16's `io_clear_ignores_seq`) asks the calling
// worker's runtime, which the model has none of: here it is always off (the model's own control
// is BLITZ_MODEL_DEFECT).
bool blitz::detail::fault_io_clear_ignores_seq() noexcept { return false; }

namespace blitz::model {
namespace {

// `edges_before`: edges the driver delivered before the reader starts (the reader's bit is set
// from an earlier arrival it already consumed). `reader_retries`: how often the reader polls
// again when wait() tells it the bit is set.
std::function<void()> readiness_body(int edges_before, int reader_retries) {
    return [=] {
        detail::scheduled_io s(-1);
        for (int i = 0; i < edges_before; ++i) s.set_ready(detail::io_readable);
        atomic<int> socket{0};  // bytes the kernel holds for the reader
        detail::wait_node node;
        bool got = false, linked = false;
        thread reader([&] {
            for (int i = 0; i <= reader_retries; ++i) {
                const detail::io_ready_event ev = s.poll(detail::io_direction::read);
                // The syscall: seq_cst, as a system call orders against the kernel's own work.
                if (socket.exchange(0, std::memory_order_seq_cst) != 0) {
                    got = true;
                    return;
                }
                s.clear(ev);  // EAGAIN
                if (s.wait(detail::io_direction::read, node, waker{})) {
                    linked = true;
                    return;
                }
            }
        });
        thread driver([&] {
            socket.store(1, std::memory_order_seq_cst);  // the byte arrives
            s.set_ready(detail::io_readable);            // and epoll reports its edge
        });
        reader.join();
        driver.join();
        if (linked) {
            // Woken (set_ready completed the node), or it is still waiting: then nothing may be
            // left in the socket.
            const bool woken = node.done.load(std::memory_order_acquire);
            if (!woken) s.cancel_wait(node);
            BLITZ_MODEL_CHECK(woken || socket.load(std::memory_order_seq_cst) == 0);
        } else {
            BLITZ_MODEL_CHECK(got || reader_retries == 0);
        }
    };
}

TEST(ModelReadiness, AReaderNeverSleepsOnAnEdgeItCleared) {
    expect_holds("readiness: reader's EAGAIN and clear against the driver's edge", options{},
                 readiness_body(1, 2));
}

TEST(ModelReadiness, AReaderNeverSleepsOnAnEdgeItClearedUnbounded) {
    options o;
    o.preemption_bound = -1;
    expect_holds("readiness: the same, unbounded", o, readiness_body(1, 2));
}

TEST(ModelReadiness, FromAFreshRegistration) {
    expect_holds("readiness: no earlier edge", options{}, readiness_body(0, 2));
}

TEST(ModelReadiness, ControlClearIgnoringTheCountIsCaught) {
    options o;
    o.weaken = "scheduled_io_clear_ignores_seq";
    expect_caught("readiness control: the clear drops the bit whatever the count", o,
                  readiness_body(1, 2));
}

}  // namespace
}  // namespace blitz::model
