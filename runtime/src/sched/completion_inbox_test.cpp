// SPDX-License-Identifier: MIT
// completion_inbox: every node pushed, from any number of threads, is taken once by the owner.

#include "sched/completion_inbox.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace blitz::detail {
namespace {

struct inbox_node {
    atomic<inbox_node*> next{nullptr};
    int id = 0;
};
struct inbox_node_link {
    static atomic<inbox_node*>& of(inbox_node* n) noexcept { return n->next; }
};
using node_inbox = completion_inbox<inbox_node, inbox_node_link>;

TEST(CompletionInbox, TakeAllReturnsEverythingPushedNewestFirst) {
    node_inbox box;
    EXPECT_TRUE(box.empty());
    EXPECT_EQ(box.take_all(), nullptr);
    std::vector<inbox_node> nodes(3);
    for (int i = 0; i < 3; ++i) {
        nodes[static_cast<std::size_t>(i)].id = i;
        box.push(&nodes[static_cast<std::size_t>(i)]);
    }
    EXPECT_FALSE(box.empty());
    std::vector<int> got;
    for (inbox_node* n = box.take_all(); n; n = node_inbox::next(n)) got.push_back(n->id);
    EXPECT_EQ(got, (std::vector<int>{2, 1, 0}));
    EXPECT_TRUE(box.empty());
    EXPECT_EQ(box.take_all(), nullptr);
}

TEST(CompletionInbox, PushesFromManyThreadsAreEachTakenOnce) {
    // Four pushers against an owner that keeps taking (a TSan target too).
    constexpr int per_thread = 20'000, threads = 4;
    std::vector<inbox_node> nodes(per_thread * threads);
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].id = static_cast<int>(i);
    node_inbox box;
    std::atomic<int> done{0};
    std::vector<std::thread> pushers;
    for (int t = 0; t < threads; ++t) {
        pushers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                box.push(&nodes[static_cast<std::size_t>(t * per_thread + i)]);
            }
            done.fetch_add(1);
        });
    }
    std::vector<int> seen(nodes.size(), 0);
    std::size_t taken = 0;
    for (;;) {
        const bool last = done.load() == threads;  // read before the take: nothing comes after
        for (inbox_node* n = box.take_all(); n; n = node_inbox::next(n)) {
            ++seen[static_cast<std::size_t>(n->id)];
            ++taken;
        }
        if (last) break;
    }
    for (auto& p : pushers) p.join();
    EXPECT_EQ(taken, nodes.size());
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "node " << i;
}

}  // namespace
}  // namespace blitz::detail
