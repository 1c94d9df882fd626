// SPDX-License-Identifier: MIT
// runtime::shutdown_timeout (issue 17): a graceful shutdown lets tracked tasks finish and aborts
// untracked ones, blocked reads and tasks holding running children; at the deadline it gives up
// and aborts the tracked ones too. (task_tracker itself: task_scope_test.cpp.)

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>

#include "blitz/blitz.hpp"
#include "blitz_testing/processes.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;

using workloads::pid_gone;

// Tracked tasks finish; an untracked task, a read that never gets data and a task holding a
// running child (kill_on_drop) are aborted; the child is killed and reaped.
TEST(ShutdownTimeout, TrackedTasksFinishTheRestIsAborted) {
    config c;
    c.workers = 2;
    auto rt = std::make_unique<runtime>(c);
    task_tracker tracker;
    cancellation_token stop;
    std::atomic<int> finished{0};
    for (int i = 0; i < 8; ++i) {
        rt->spawn(
              tracker.track([](cancellation_token stop, std::atomic<int>& finished) -> task<void> {
                  co_await stop.cancelled();  // the shutdown's signal to wrap up
                  co_await sleep(10ms);       // in-flight work still completes
                  finished.fetch_add(1);
              }(stop, finished)))
            .detach();
    }
    auto untracked = rt->spawn([]() -> task<void> { co_await sleep(std::chrono::hours(1)); }());
    auto [a, b] = rt->block_on([]() -> task<std::pair<net::unix_stream, net::unix_stream>> {
        co_return std::move(net::unix_stream::pair().value());
    }());
    auto reader = rt->spawn([](net::unix_stream s) -> task<void> {
        std::array<std::byte, 16> buf;
        (void)co_await s.read(buf);
    }(std::move(b)));
    const pid_t child = rt->block_on([]() -> task<pid_t> {
        auto ch = process::command("sleep").arg("100").kill_on_drop(true).spawn();
        EXPECT_TRUE(ch.ok());
        const pid_t pid = ch->id();
        spawn([](process::child ch) -> task<void> { (void)co_await ch.wait(); }(std::move(*ch)))
            .detach();
        co_return pid;
    }());
    EXPECT_TRUE(rt->shutdown_timeout(10s, &tracker, &stop));
    EXPECT_EQ(finished.load(), 8);
    EXPECT_TRUE(untracked.is_cancelled());
    EXPECT_TRUE(reader.is_cancelled());
    rt.reset();
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!pid_gone(child) && std::chrono::steady_clock::now() < until) {
        process::reap_orphans();
        std::this_thread::sleep_for(2ms);
    }
    EXPECT_TRUE(pid_gone(child)) << "the child of an aborted task was not killed and reaped";
}

TEST(ShutdownTimeout, GivesUpAtTheDeadline) {
    runtime rt(config{});
    task_tracker tracker;
    auto stuck =
        rt.spawn(tracker.track([]() -> task<void> { co_await sleep(std::chrono::hours(1)); }()));
    EXPECT_FALSE(rt.shutdown_timeout(50ms, &tracker));
    EXPECT_TRUE(stuck.is_cancelled());
    EXPECT_EQ(tracker.size(), 0u);
}

}  // namespace
}  // namespace blitz
