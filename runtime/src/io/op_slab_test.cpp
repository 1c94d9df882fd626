// SPDX-License-Identifier: MIT
// op_slab (io/op_slab.hpp): states are reused with a new generation and never given back to the
// heap while the slab lives; a descriptor's operations are counted; a descriptor closed with
// operations in flight is closed by the release of its last one, exactly once.

#include "io/op_slab.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "io/scheduled_io.hpp"

namespace blitz::detail {
namespace {

TEST(OpSlab, ReusesStatesWithANewGenerationAndCountsThem) {
    op_slab slab;
    lock_guard l(slab.mu());
    io_op_state* a = slab.alloc(nullptr, io_op_kind::file_read, 7);
    EXPECT_EQ(a->fd, 7);
    EXPECT_EQ(a->sio, nullptr);
    EXPECT_EQ(a->phase.load(), io_op_state::in_flight);
    EXPECT_EQ(slab.live(), a);
    const std::uint16_t gen = a->gen;
    EXPECT_EQ(slab.release(a), -1);
    EXPECT_EQ(slab.live(), nullptr);
    EXPECT_EQ(a->gen, static_cast<std::uint16_t>(gen + 1)) << "a late completion must not match";
    io_op_state* b = slab.alloc(nullptr, io_op_kind::file_write, 8);
    EXPECT_EQ(b, a) << "the free list gives the state back";
    EXPECT_EQ(slab.started(), 2u);
    EXPECT_EQ(slab.in_flight(), 1u);
    EXPECT_EQ(slab.release(b), -1);
    EXPECT_EQ(slab.in_flight(), 0u);
}

TEST(OpSlab, GrowsByChunksAndKeepsEveryStateDistinctAndLinked) {
    op_slab slab;
    lock_guard l(slab.mu());
    std::vector<io_op_state*> ops;
    std::set<io_op_state*> seen;
    for (int i = 0; i < 200; ++i) {  // past three chunks of 64
        ops.push_back(slab.alloc(nullptr, io_op_kind::file_read, i));
        EXPECT_TRUE(seen.insert(ops.back()).second);
    }
    std::size_t linked = 0;
    for (io_op_state* op = slab.live(); op; op = op->next) ++linked;
    EXPECT_EQ(linked, 200u);
    // Out of order, from the middle of the list: the links stay whole.
    for (std::size_t i = 0; i < ops.size(); i += 2) EXPECT_EQ(slab.release(ops[i]), -1);
    linked = 0;
    for (io_op_state* op = slab.live(); op; op = op->next) {
        EXPECT_TRUE(op->prev == nullptr || op->prev->next == op);
        ++linked;
    }
    EXPECT_EQ(linked, 100u);
    for (std::size_t i = 1; i < ops.size(); i += 2) EXPECT_EQ(slab.release(ops[i]), -1);
    EXPECT_EQ(slab.live(), nullptr);
}

TEST(OpSlab, TheLastReleaseOfAClosedDescriptorClosesItOnce) {
    op_slab slab;
    scheduled_io s(42);
    lock_guard l(slab.mu());
    io_op_state* a = slab.alloc(&s, io_op_kind::recv, -1);
    io_op_state* b = slab.alloc(&s, io_op_kind::send, -1);
    EXPECT_EQ(a->fd, 42);
    EXPECT_EQ(slab.of(&s).ops, 2u);
    EXPECT_FALSE(slab.close(&s, 42)) << "two in flight: the close waits for them";
    EXPECT_TRUE(slab.of(&s).closing);
    EXPECT_EQ(slab.deferred_closes(), 1u);
    EXPECT_EQ(slab.release(a), -1);
    EXPECT_EQ(slab.release(b), 42) << "the last one closes the number";
    EXPECT_EQ(slab.of(&s).close_fd, -1) << "and only once";
    EXPECT_EQ(slab.of(&s).ops, 0u);

    scheduled_io t(43);
    EXPECT_TRUE(slab.close(&t, 43)) << "nothing in flight: closed now";
    EXPECT_EQ(slab.deferred_closes(), 1u);
}

}  // namespace
}  // namespace blitz::detail
