// SPDX-License-Identifier: MIT
// The table of spawn sites (task/site_table.hpp): a key keeps one index, an index names its key,
// a full table says 0, and concurrent adds of the same keys agree.

#include "task/site_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "blitz/detail/context.hpp"
#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace {

using blitz::detail::site_table;

const void* key(std::uintptr_t i) { return reinterpret_cast<const void*>(0x10000 + 16 * i); }

TEST(SiteTable, AKeyKeepsItsIndexAndTheIndexNamesIt) {
    auto t = std::make_unique<site_table<100>>();
    std::set<std::uint16_t> seen;
    for (std::uintptr_t i = 0; i < 100; ++i) {
        const std::uint16_t x = t->index_of(key(i));
        ASSERT_NE(x, 0);
        EXPECT_TRUE(seen.insert(x).second) << "index " << x << " given twice";
        EXPECT_EQ(t->at(x), key(i));
    }
    for (std::uintptr_t i = 0; i < 100; ++i) EXPECT_EQ(t->at(t->index_of(key(i))), key(i));
    EXPECT_EQ(t->size(), 100u);
}

TEST(SiteTable, NoKeyAndAFullTableGiveZero) {
    auto t = std::make_unique<site_table<3>>();
    EXPECT_EQ(t->index_of(nullptr), 0);
    EXPECT_EQ(t->index_of(reinterpret_cast<const void*>(std::uintptr_t{1} << 48)), 0);
    for (std::uintptr_t i = 0; i < 3; ++i) EXPECT_NE(t->index_of(key(i)), 0);
    EXPECT_EQ(t->index_of(key(3)), 0);              // full
    EXPECT_EQ(t->at(t->index_of(key(1))), key(1));  // the old ones still answer
    EXPECT_EQ(t->at(0), nullptr);
    EXPECT_EQ(t->at(4), nullptr);
}

TEST(SiteTable, ThreadsAddingTheSameKeysAgreeOnTheirIndices) {
    auto t = std::make_unique<site_table<1000>>();
    constexpr int threads = 4, keys = 600;
    std::vector<std::vector<std::uint16_t>> got(threads, std::vector<std::uint16_t>(keys));
    std::vector<std::thread> ts;
    for (int th = 0; th < threads; ++th) {
        ts.emplace_back([&, th] {
            // Each thread walks the keys from another start, so that adds of one key race.
            for (int n = 0; n < keys; ++n) {
                const int i = (n + th * keys / threads) % keys;
                got[th][i] = t->index_of(key(static_cast<std::uintptr_t>(i)));
                EXPECT_EQ(t->at(got[th][i]), key(static_cast<std::uintptr_t>(i)));
            }
        });
    }
    for (auto& th : ts) th.join();
    std::set<std::uint16_t> distinct;
    for (int i = 0; i < keys; ++i) {
        for (int th = 1; th < threads; ++th) EXPECT_EQ(got[th][i], got[0][i]) << "key " << i;
        distinct.insert(got[0][i]);
    }
    EXPECT_EQ(distinct.size(), static_cast<std::size_t>(keys));
    EXPECT_EQ(t->size(), static_cast<unsigned>(keys));
}

// Through the runtime: spawns from two sites, alternating, keep their own sites (and ids).
blitz::task<void> note_site(int* line) {
    *line = static_cast<int>(blitz::detail::current_task()->spawn_site().line());
    co_return;
}

TEST(SiteTable, TasksFromAlternatingSitesKeepTheirOwn) {
    blitz::runtime rt(blitz::config{});
    for (int i = 0; i < 4; ++i) {
        int got_a = 0, got_b = 0;
        const int line_a = __LINE__ + 1;
        auto a = rt.spawn(note_site(&got_a));
        const int line_b = __LINE__ + 1;
        auto b = rt.spawn(note_site(&got_b));
        const std::uint64_t id_a = a.id(), id_b = b.id();
        EXPECT_NE(id_a, id_b);
        rt.block_on(std::move(a));
        rt.block_on(std::move(b));
        EXPECT_EQ(got_a, line_a);
        EXPECT_EQ(got_b, line_b);
    }
}

}  // namespace
