// SPDX-License-Identifier: MIT
// The current-thread runtime's core under contention (issue 47): threads that call block_on and
// join at once, with spawns and wakes from threads that never drive, and a dump now and then.
// Every task runs exactly once, on whichever thread drives at the time; nothing hangs. The
// verdicts come from counts, never from elapsed time.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/workloads.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

TEST(CurrentThreadStress, DriversJoinersAndForeignSpawnersShareOneRuntime) {
    config c = config::current_thread();
    runtime rt(c);
    const int rounds = static_cast<int>(200 * stress::scale());
    std::atomic<unsigned long> nodes{0};
    std::atomic<int> foreign_ran{0};
    std::vector<std::thread> threads;
    // Drivers: block_on on trees of spawns (3 levels of 4: 85 nodes each).
    for (int d = 0; d < 3; ++d) {
        threads.emplace_back([&] {
            for (int r = 0; r < rounds; ++r) nodes += rt.block_on(workloads::tree(3, 4));
        });
    }
    // Joiners: spawn from outside, then join (which drives, or waits for the driver).
    for (int j = 0; j < 2; ++j) {
        threads.emplace_back([&] {
            for (int r = 0; r < rounds; ++r) {
                auto h = rt.spawn([](std::atomic<int>& ran) -> task<int> {
                    co_await yield_now();
                    ran.fetch_add(1);
                    co_return 1;
                }(foreign_ran));
                EXPECT_EQ(h.join(), 1);
            }
        });
    }
    // A dumper: answered by the driver, or by itself between drives.
    threads.emplace_back([&] {
        for (int r = 0; r < rounds / 4 + 1; ++r) {
            const runtime_dump d = rt.dump(std::chrono::seconds(30));
            EXPECT_TRUE(d.workers_not_answering.empty());
        }
    });
    for (auto& t : threads) t.join();
    EXPECT_EQ(nodes.load(), 3ul * static_cast<unsigned long>(rounds) * 85ul);
    EXPECT_EQ(foreign_ran.load(), 2 * rounds);
    const runtime_metrics m = rt.metrics();
    EXPECT_EQ(m.num_parked, 1u) << "its worker counts as parked once nobody drives";
    EXPECT_EQ(m.num_searching, 0u);
}

}  // namespace
}  // namespace blitz
