// SPDX-License-Identifier: MIT
// Model: a completion operation's lifecycle (io/op_state.hpp's phase protocol, io/op_slab.hpp;
// issue 44). The kernel writes the received bytes into the operation's buffer and posts its final
// completion; the driver then calls complete(). The awaiting task looks for the result a few
// times and, if it is not there yet, gives up (its task is aborted, a select branch lost, a
// timeout fired) with orphan(). Whatever the interleaving: the state is freed exactly once (back
// to the slab with a new generation), the bytes are delivered exactly once (taken by the
// awaiter, or settled by whichever side frees: kept for the next read, R4), and an awaiter that
// takes the result sees what the kernel wrote.
//
// The buffer's bytes are a model atomic written relaxed before the completion (the kernel's
// write, published by complete()'s release). The slab and its lock are the runtime's own; the
// awaiter's free takes the lock as io_driver::finish does.

#include <gtest/gtest.h>

#include "io/op_slab.hpp"
#include "model.hpp"
#include "model_report.hpp"

namespace blitz::model {
namespace {

// `looks`: how often the awaiter looks for the result before it gives up (0: it gives up at
// once, racing the completion).
std::function<void()> op_lifecycle_body(int looks) {
    return [=] {
        detail::op_slab slab;
        detail::io_op_state* op;
        {
            detail::lock_guard l(slab.mu());
            op = slab.alloc(nullptr, detail::io_op_kind::recv, 3);
        }
        const std::uint16_t gen = op->gen;
        atomic<int> bytes{0};  // what the kernel wrote into the operation's buffer
        int frees = 0, delivered = 0, kept = 0;
        int seen = -1;  // the bytes the awaiter read with the result
        auto free_state = [&] {
            detail::lock_guard l(slab.mu());
            (void)slab.release(op);
            ++frees;
        };
        thread driver([&] {
            bytes.store(5, std::memory_order_relaxed);  // the kernel fills the buffer
            if (!op->complete(5)) {
                kept += op->result;  // orphaned: settled (kept for the next read) and freed
                free_state();
            }
        });
        thread awaiter([&] {
            for (int i = 0; i < looks; ++i) {
                if (op->finished()) {
                    seen = bytes.load(std::memory_order_relaxed);
                    delivered += op->result;
                    free_state();
                    return;
                }
                detail::spin_pause();
            }
            if (!op->orphan()) {
                kept += op->result;  // it came first: the awaiter settles and frees
                free_state();
            }
        });
        driver.join();
        awaiter.join();
        BLITZ_MODEL_CHECK(frees == 1);
        BLITZ_MODEL_CHECK(delivered + kept == 5);
        BLITZ_MODEL_CHECK(seen == -1 || seen == 5);
        BLITZ_MODEL_CHECK(op->gen != gen);  // a late completion of this use matches nothing
        detail::lock_guard l(slab.mu());
        BLITZ_MODEL_CHECK(slab.in_flight() == 0 && slab.live() == nullptr);
    };
}

TEST(ModelOpSlab, TheStateIsFreedOnceAndTheBytesDeliveredOnce) {
    expect_holds("op lifecycle: completion against an awaiter that looks, then gives up", options{},
                 op_lifecycle_body(2));
}

TEST(ModelOpSlab, AnAwaiterGivingUpAtOnceRacesTheCompletion) {
    options o;
    o.preemption_bound = -1;
    expect_holds("op lifecycle: orphan against complete, unbounded", o, op_lifecycle_body(0));
}

TEST(ModelOpSlab, ControlRelaxedCompletionIsCaught) {
    options o;
    o.weaken = "io_op_complete";
    expect_caught("op lifecycle control: complete() publishes the result relaxed", o,
                  op_lifecycle_body(2));
}

TEST(ModelOpSlab, ControlRelaxedLookIsCaught) {
    options o;
    o.weaken = "io_op_finished";
    expect_caught("op lifecycle control: the awaiter's look is relaxed", o, op_lifecycle_body(2));
}

TEST(ModelOpSlab, ControlOrphanWithoutLookingIsCaught) {
    options o;
    o.weaken = "io_op_orphan_blind";
    expect_caught("op lifecycle control: orphan() ignores a completion that came first", o,
                  op_lifecycle_body(1));
}

}  // namespace
}  // namespace blitz::model
