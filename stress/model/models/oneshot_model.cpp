// SPDX-License-Identifier: MIT
// Model: the oneshot channel (X6) with its real awaitable, in a task polled by a model worker.
// The receiver sees exactly one of the value and the end; a value is delivered, handed back to
// the sender or destroyed with the receiver, exactly once, also when the waiting task is aborted.

#include <gtest/gtest.h>

#include "blitz/chan/oneshot.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "blitz_testing/counted_payload.hpp"
#include "model.hpp"
#include "model_report.hpp"
#include "runtime_statics.hpp"
#include "task/alloc_stats.hpp"
#include "task_harness.hpp"

namespace blitz::model {
namespace {

using payload = workloads::counted_payload;

task<long> receive(oneshot_receiver<payload> rx) {
    auto v = co_await rx;
    co_return v ? static_cast<long>(v->id) : -1;
}

enum class sender_does { send, drop };

std::function<void()> oneshot_body(sender_does what, bool abort_receiver) {
    return [=] {
        const long live_before = payload::live.load();
        {
            task_harness h;
            auto ends = oneshot<payload>();
            oneshot_sender<payload>& tx = ends.first;
            auto jh = h.spawn(receive(std::move(ends.second)));
            bool handed_back = false;
            thread worker([&h] { h.run_worker(); });
            // The sender lives here; the model thread takes it by reference (std::function
            // cannot hold a move-only capture).
            thread sender([&] {
                if (what == sender_does::drop) {
                    auto gone = std::move(tx);
                } else {
                    payload v(7);
                    handed_back = !std::move(tx).send(std::move(v)).sent();
                }
            });
            if (abort_receiver) jh.abort();
            sender.join();
            const std::optional<long> got = join_unless_cancelled(jh);
            h.stop();
            worker.join();
            if (got) {
                // Exactly one of the value and the end.
                BLITZ_MODEL_CHECK(what == sender_does::send ? *got == 7 : *got == -1);
                BLITZ_MODEL_CHECK(!handed_back);
            }
            if (!abort_receiver) BLITZ_MODEL_CHECK(got.has_value());
        }
        // Every payload made was destroyed exactly once (delivered, handed back or dropped).
        BLITZ_MODEL_CHECK(payload::live.load() == live_before);
    };
}

TEST(ModelOneshot, SendRacingTheReceiversWait) {
    make_runtime_statics();
    expect_holds("oneshot: send against the receiving task", options{},
                 oneshot_body(sender_does::send, false));
}

TEST(ModelOneshot, DropRacingTheReceiversWait) {
    make_runtime_statics();
    expect_holds("oneshot: sender dropped against the receiving task", options{},
                 oneshot_body(sender_does::drop, false));
}

TEST(ModelOneshot, SendRacingAnAbortOfTheReceiver) {
    make_runtime_statics();
    expect_holds("oneshot: send against an abort of the receiving task", options{},
                 oneshot_body(sender_does::send, true));
}

TEST(ModelOneshot, ControlSenderThatDoesNotWakeIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "oneshot_skip_wake";
    o.max_steps = 5000;  // the receiver never runs again: the worker idles until the limit
    expect_caught("oneshot control: the sender leaves the receiver's wake out", o,
                  oneshot_body(sender_does::send, false));
}

TEST(ModelOneshot, ControlLastEndThatKeepsTheStateIsCaught) {
    make_runtime_statics();
    options o;
    o.weaken = "oneshot_last_keeps_state";
    // The receiver lets go after the sender (its write finds tx_done) and does not free: the
    // value the aborted receiver never took is never destroyed.
    expect_caught("oneshot control: the last end to let go keeps the state", o,
                  oneshot_body(sender_does::send, true));
}

}  // namespace
}  // namespace blitz::model
