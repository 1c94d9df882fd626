// SPDX-License-Identifier: MIT
// registration_set (R6): a deregistered block is freed only once the backend let go of it too,
// at the driver's next turn; shutdown reaches every block, live and later. Counted by the
// set's own block count (and by ASan, which sees a block freed early or never).

#include "io/registration_set.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace blitz::detail {
namespace {

TEST(RegistrationSet, ABlockTheBackendStillNamesIsNotFreed) {
    registration_set set;
    scheduled_io* s = set.add(-1);
    set.release(s, /*backend_done=*/false);  // io_uring: the poll's final completion is due
    EXPECT_EQ(set.free_released(), 0u);
    EXPECT_EQ(set.blocks(), 1u);
    set.backend_released(s);
    EXPECT_EQ(set.free_released(), 1u);
    EXPECT_EQ(set.blocks(), 0u);
}

TEST(RegistrationSet, AnEpollReleaseIsFreedAtTheNextTurnNotBefore) {
    registration_set set;
    scheduled_io* s = set.add(-1);
    set.release(s, /*backend_done=*/true);
    EXPECT_EQ(set.blocks(), 1u) << "release() must not free: a wait in progress may name it";
    EXPECT_EQ(set.free_released(), 1u);
    EXPECT_EQ(set.free_released(), 0u);
    EXPECT_EQ(set.registrations(), 1u);
}

TEST(RegistrationSet, OnlyReleasedBlocksAreFreed) {
    registration_set set;
    std::vector<scheduled_io*> v;
    for (int i = 0; i < 8; ++i) v.push_back(set.add(i));
    for (int i = 0; i < 8; i += 2) set.release(v[static_cast<std::size_t>(i)], true);
    EXPECT_EQ(set.free_released(), 4u);
    EXPECT_EQ(set.blocks(), 4u);
    for (int i = 1; i < 8; i += 2) EXPECT_EQ(v[static_cast<std::size_t>(i)]->fd(), i);
}

TEST(RegistrationSet, ShutdownReachesEveryLiveBlockAndLaterOnes) {
    registration_set set;
    scheduled_io* a = set.add(-1);
    scheduled_io* b = set.add(-1);
    set.shutdown();
    EXPECT_TRUE(a->poll(io_direction::read).ready & io_shutdown);
    EXPECT_TRUE(b->poll(io_direction::write).ready & io_shutdown);
    scheduled_io* c = set.add(-1);
    EXPECT_TRUE(c->poll(io_direction::read).ready & io_shutdown);
}

TEST(RegistrationSet, ADiscardedBlockIsGoneAtOnce) {
    registration_set set;
    scheduled_io* s = set.add(-1);
    set.discard(s);
    EXPECT_EQ(set.blocks(), 0u);
    EXPECT_EQ(set.registrations(), 1u);
}

// Four threads register and release while a turning thread frees: every block is freed exactly
// once (ASan and TSan see the rest), and none is left at the end.
TEST(RegistrationSet, ConcurrentAddsReleasesAndTurnsFreeEveryBlockOnce) {
    registration_set set;
    constexpr int threads = 4, each = 5000;
    std::atomic<int> done{0};
    std::thread turner([&] {
        while (done.load() < threads) (void)set.free_released();
    });
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
        ts.emplace_back([&, t] {
            for (int i = 0; i < each; ++i) {
                scheduled_io* s = set.add(t);
                const bool at_once = (i & 1) != 0;
                set.release(s, at_once);
                if (!at_once) set.backend_released(s);
            }
            done.fetch_add(1);
        });
    }
    for (auto& t : ts) t.join();
    turner.join();
    (void)set.free_released();
    EXPECT_EQ(set.blocks(), 0u);
    EXPECT_EQ(set.registrations(), static_cast<std::uint64_t>(threads) * each);
}

}  // namespace
}  // namespace blitz::detail
