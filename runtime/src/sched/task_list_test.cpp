// SPDX-License-Identifier: MIT
// task_list: tasks join at spawn and leave at once when they complete (the owner removes them,
// see completion_inbox for those completed elsewhere); the array shrinks after a burst;
// shutdown pops the rest (K3's bookkeeping for tasks that sit in no queue).

#include "sched/task_list.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "blitz_testing/test_support.hpp"
#include "task/task_access.hpp"

namespace blitz::detail {
namespace {

using namespace state;

// Headers with two references (the list's and the test's).
void prepare(task_header* h, bool complete) {
    task_access::state(*h).store(2 * ref_one |
                                 lifecycle_bits(complete ? lifecycle::complete : lifecycle::idle));
}

TEST(TaskList, PopTakesOutEveryTaskOnce) {
    testing::header_pool pool(10);
    task_list l;
    for (int i = 0; i < 10; ++i) {
        prepare(pool.at(i), i % 3 == 0);
        l.push(pool.at(i));
    }
    EXPECT_EQ(l.size(), 10u);
    std::set<std::size_t> popped;
    while (task_header* t = l.pop()) {
        EXPECT_EQ(task_access::reg_owner(*t).load(), 0u);
        EXPECT_TRUE(popped.insert(pool.index_of(t)).second);
    }
    EXPECT_EQ(popped.size(), 10u);
}

TEST(TaskList, RemoveUnlinksHeadTailAndMiddleOnce) {
    testing::header_pool pool(10);
    task_list l;
    for (int i = 0; i < 10; ++i) {
        prepare(pool.at(i), false);
        l.push(pool.at(i));
    }
    for (int i : {0, 9, 4, 5}) EXPECT_TRUE(l.remove(pool.at(i))) << i;  // tail, head, middle
    EXPECT_FALSE(l.remove(pool.at(4)));                                 // already out
    EXPECT_EQ(task_access::reg_owner(*pool.at(4)).load(), 0u);
    EXPECT_EQ(l.size(), 6u);
    std::set<std::size_t> left;
    while (task_header* t = l.pop()) left.insert(pool.index_of(t));
    EXPECT_EQ(left, (std::set<std::size_t>{1, 2, 3, 6, 7, 8}));
}

TEST(TaskList, ATaskIsRemovedOnlyFromItsOwnList) {
    testing::header_pool pool(2);
    task_list a, b;
    a.push(pool.at(0));
    b.push(pool.at(1));
    EXPECT_FALSE(b.remove(pool.at(0)));
    EXPECT_EQ(a.size(), 1u);
    EXPECT_TRUE(a.remove(pool.at(0)));
    EXPECT_EQ(a.size(), 0u);
}

TEST(TaskList, PositionsFollowTheMovedEntries) {
    // Removing from the middle moves the last entry into the hole; removing the last entry
    // moves nothing. Every later remove must still find its task (its position was updated).
    testing::header_pool pool(6);
    task_list l;
    for (int i = 0; i < 6; ++i) {
        prepare(pool.at(i), false);
        l.push(pool.at(i));
    }
    EXPECT_TRUE(l.remove(pool.at(1)));  // 5 moves to 1
    EXPECT_TRUE(l.remove(pool.at(4)));  // the last one now
    EXPECT_TRUE(l.remove(pool.at(5)));  // at its new position
    EXPECT_FALSE(l.remove(pool.at(5)));
    EXPECT_TRUE(l.remove(pool.at(0)));  // 3 moves to 0
    EXPECT_TRUE(l.remove(pool.at(3)));
    EXPECT_TRUE(l.remove(pool.at(2)));
    EXPECT_EQ(l.size(), 0u);
    EXPECT_EQ(l.pop(), nullptr);
}

TEST(TaskList, EveryListHasItsOwnNonZeroId) {
    // A task in no list has id 0; two lists alive at once never share an id.
    testing::header_pool pool(64);
    std::vector<std::unique_ptr<task_list>> lists;
    for (int i = 0; i < 64; ++i) {
        lists.push_back(std::make_unique<task_list>());
        lists.back()->push(pool.at(i));
        EXPECT_NE(task_access::reg_owner(*pool.at(i)).load(), 0u);
    }
    std::set<unsigned> ids;
    for (int i = 0; i < 64; ++i) ids.insert(task_access::reg_owner(*pool.at(i)).load());
    EXPECT_EQ(ids.size(), 64u);
    for (auto& l : lists) l->pop();
}

TEST(TaskList, TrimGivesBackMemoryOfAnEmptiedList) {
    // After a burst the array shrinks when the owner, going idle, finds it under a quarter full.
    constexpr int n = 20'000;
    testing::header_pool pool(n);
    task_list l;
    for (int i = 0; i < n; ++i) prepare(pool.at(i), false);
    for (int i = 0; i < n; ++i) l.push(pool.at(i));
    const std::size_t burst = l.capacity();
    EXPECT_GE(burst, static_cast<std::size_t>(n));
    for (int i = 100; i < n; ++i) EXPECT_TRUE(l.remove(pool.at(i)));
    l.trim();
    EXPECT_EQ(l.size(), 100u);
    EXPECT_EQ(l.capacity(), 1024u);
    EXPECT_LT(l.capacity(), burst);
    while (l.pop()) {
    }
}

TEST(TaskList, ReservedIdsAreConsecutiveAndNeverZero) {
    for (int round = 0; round < 40; ++round) {  // past the 65,535 wrap at least once
        const std::uint16_t first = task_list::reserve_ids(4096);
        EXPECT_NE(first, 0u);
        EXPECT_LE(unsigned{first} + 4095, 65535u);
    }
    const std::uint16_t a = task_list::reserve_ids(3), b = task_list::reserve_ids(3);
    EXPECT_NE(a, b);
}

}  // namespace
}  // namespace blitz::detail
