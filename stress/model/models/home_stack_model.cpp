// SPDX-License-Identifier: MIT
// Model: a thread's home for its blocks (issue 45; task/home_stack.hpp). Two threads return
// blocks to the owner's home, one a chain of two and one a single block, each writing into its
// blocks first; the owner takes its home once, then closes it as a thread does at exit. A pusher
// whose push finds the home closed keeps its chain (it would free it to the heap). Every block is
// taken by the owner or kept by its pusher, exactly once, and the owner sees what was written.

#include <gtest/gtest.h>

#include "model.hpp"
#include "model_report.hpp"
#include "task/home_stack.hpp"

namespace blitz::model {
namespace {

struct home_block {
    detail::atomic<home_block*> next{nullptr};
    detail::atomic<int> written{0};  // the block's contents, written before the push
    int taken = 0;                   // by the owner (its alone until the joins)
    int kept = 0;                    // by the pusher whose push failed (its alone)
};
struct home_block_link {
    static detail::atomic<home_block*>& of(home_block* b) noexcept { return b->next; }
};
using home = detail::home_stack<home_block, home_block_link>;

std::function<void()> home_body() {
    return [] {
        home h;
        home_block a1, a2, b;
        auto send = [&](home_block* first, home_block* last) {
            for (home_block* x = first;; x = home::next(x)) {
                x->written.store(1, std::memory_order_relaxed);  // published by the push
                if (x == last) break;
            }
            if (!h.push_chain(first, last)) {
                for (home_block* x = first;; x = home::next(x)) {
                    ++x->kept;
                    if (x == last) break;
                }
            }
        };
        thread ta([&] {
            a1.next.store(&a2, std::memory_order_relaxed);  // the batch's own link
            send(&a1, &a2);
        });
        thread tb([&] { send(&b, &b); });
        auto take = [&](home_block* x) {
            while (x) {
                home_block* next = home::next(x);
                BLITZ_MODEL_CHECK(x->written.load(std::memory_order_relaxed) == 1);
                ++x->taken;
                x = next;
            }
        };
        take(h.take_all());  // a cache that ran dry
        take(h.close());     // the owner's exit
        ta.join();
        tb.join();
        for (home_block* x : {&a1, &a2, &b}) BLITZ_MODEL_CHECK(x->taken + x->kept == 1);
        BLITZ_MODEL_CHECK(a1.kept == a2.kept);  // a chain is pushed whole or not at all
    };
}

TEST(ModelHomeStack, EveryReturnedBlockIsTakenOrKeptOnceWithItsContents) {
    expect_holds("home stack: two pushers against the owner's take and close", untimed(),
                 home_body());
}

TEST(ModelHomeStack, ControlRelaxedPushIsCaught) {
    options o = untimed();
    o.weaken = "home_push";
    expect_caught("home stack control: the push's CAS relaxed", o, home_body());
}

TEST(ModelHomeStack, ControlCloseByLoadThenStoreIsCaught) {
    options o = untimed();
    o.weaken = "home_close_load_then_store";
    expect_caught("home stack control: close loads then stores (loses a push)", o, home_body());
}

}  // namespace
}  // namespace blitz::model
