// SPDX-License-Identifier: MIT
// The stall detector (issue 46, INVARIANTS D1): a poll stuck in user code, in a blocking call
// or in busy mode is reported once, within the threshold plus a bound counted in the
// watchdog's samples; idle and busy-but-progressing workers are never reported; the stack
// capture and symbolizer name the stuck function; signals meant for others are passed on.

#include "sched/stall_watchdog.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/stack_trace.hpp"
#include "blitz/blitz.hpp"
#include "sched/worker.hpp"

namespace {

using namespace std::chrono_literals;
using blitz::config;
using blitz::stall_report;

#if defined(__SANITIZE_THREAD__)
constexpr bool tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool tsan = true;
#else
constexpr bool tsan = false;
#endif
#else
constexpr bool tsan = false;
#endif

// Collects reports from config::on_stall (the watchdog thread) for the test's thread.
struct collector {
    std::mutex mu;
    std::vector<stall_report> reports;
    std::atomic<int> count{0};
    void install(config& c) {
        c.on_stall = [this](const stall_report& r) {
            {
                std::lock_guard<std::mutex> l(mu);
                reports.push_back(r);
            }
            count.fetch_add(1);
        };
    }
    std::vector<stall_report> all() {
        std::lock_guard<std::mutex> l(mu);
        return reports;
    }
};

config stall_config(collector& col, unsigned workers, std::chrono::nanoseconds threshold = 20ms) {
    config c;
    c.workers = workers;
    c.stall_threshold = threshold;
    col.install(c);
    return c;
}

// Samples from a stuck poll's start to the sample that finds it: the threshold's worth of
// periods, and two for the first sample sure to see the poll's counters (the one the task read
// may have read them just before the poll began). The report follows after the worker's answer
// to the stack signal, at most the answer wait later.
std::uint64_t sample_bound(std::chrono::nanoseconds threshold) {
    const auto p = blitz::detail::stall_watchdog::period_for(threshold);
    return static_cast<std::uint64_t>((threshold + p - 1ns) / p) + 2;
}
std::uint64_t answer_bound(std::chrono::nanoseconds threshold) {
    return blitz::detail::stall_watchdog::answer_wait_samples(threshold);
}

bool has_frame(const stall_report& r, const std::string& name) {
    return std::any_of(r.stack.begin(), r.stack.end(),
                       [&](const std::string& f) { return f.find(name) != std::string::npos; });
}

// A poll that keeps its worker until the detector reported it, or until `limit` samples passed
// (a missed report then shows as no report, not as a hang). Not inlined, so it is on the stack.
[[gnu::noinline]] void spin_until_reported(blitz::runtime& rt, collector& col, int reports_before,
                                           std::uint64_t limit) {
    const std::uint64_t start = rt.metrics().stall_samples;
    while (col.count.load() == reports_before && rt.metrics().stall_samples - start < limit) {
        // Under ThreadSanitizer a signal reaches the thread only at a call TSan intercepts.
        if (tsan) ::usleep(100);
    }
}

TEST(StallDetector, ReportsAPollStuckInUserCodeWithItsTaskSiteAndStack) {
    collector col;
    blitz::runtime rt(stall_config(col, 2));
    std::uint64_t start_sample = 0;
    unsigned ran_on = 99;
    const int spawn_line = __LINE__ + 1;
    auto h = rt.spawn([](blitz::runtime& r, collector& c, std::uint64_t& s, unsigned& on,
                         std::uint64_t bound) -> blitz::task<void> {
        s = r.metrics().stall_samples;
        on = blitz::detail::current_worker()->index();
        spin_until_reported(r, c, 0, bound * 4 + answer_bound(20ms));
        co_return;
    }(rt, col, start_sample, ran_on, sample_bound(20ms)));
    h.join();
    const auto reports = col.all();
    ASSERT_EQ(reports.size(), 1u) << "no stall reported";
    const stall_report& r = reports[0];
    EXPECT_EQ(r.worker, ran_on);
    EXPECT_GE(r.duration, 20ms);
    EXPECT_LE(r.detected_sample - start_sample, sample_bound(20ms)) << r.to_string();
    EXPECT_LE(r.sample - r.detected_sample, answer_bound(20ms)) << r.to_string();
    if (!tsan) {
        EXPECT_EQ(r.task_id, h.id());
        ASSERT_TRUE(r.spawn_site_known);
        EXPECT_EQ(static_cast<int>(r.spawn_site.line()), spawn_line);
        EXPECT_NE(std::string(r.spawn_site.file_name()).find("stall_watchdog_test.cpp"),
                  std::string::npos);
        EXPECT_TRUE(has_frame(r, "spin_until_reported")) << r.to_string();
        EXPECT_TRUE(r.stack_note.empty()) << r.stack_note;
    } else if (r.task_id == 0) {
        EXPECT_NE(r.stack_note.find("did not answer"), std::string::npos) << r.to_string();
    }
    const auto m = rt.metrics();
    EXPECT_EQ(m.stalls, 1u);
    EXPECT_EQ(m.workers[ran_on].stalls, 1u);
    EXPECT_GE(m.longest_stall_ns, 20'000'000u);
}

[[gnu::noinline]] void read_one_byte(int fd) {
    char b = 0;
    while (::read(fd, &b, 1) < 0 && errno == EINTR) {
    }
}

TEST(StallDetector, ReportsAWorkerBlockedInASyscallAndTheCallResumes) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    collector col;
    config c;
    c.workers = 1;
    c.stall_threshold = 20ms;
    // The hook releases the blocked read: the report is made while the worker is in read(2).
    c.on_stall = [&](const stall_report& r) {
        {
            std::lock_guard<std::mutex> l(col.mu);
            col.reports.push_back(r);
        }
        col.count.fetch_add(1);
        const char b = 'x';
        (void)!::write(fds[1], &b, 1);
    };
    {
        blitz::runtime rt(c);
        rt.block_on([](int fd) -> blitz::task<void> {
            read_one_byte(fd);
            co_return;
        }(fds[0]));
    }
    ::close(fds[0]);
    ::close(fds[1]);
    const auto reports = col.all();
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].worker, 0u);
    EXPECT_NE(reports[0].task_id, 0u) << reports[0].to_string();
    ASSERT_FALSE(reports[0].stack.empty());
    // (Under ThreadSanitizer its own signal wrapper runs our handler, one frame further in.)
    if (!tsan) {
        EXPECT_NE(reports[0].stack[0].find("read"), std::string::npos)
            << "the stack starts in the interrupted call: " << reports[0].to_string();
    }
    EXPECT_TRUE(has_frame(reports[0], "read_one_byte")) << reports[0].to_string();
}

TEST(StallDetector, ReportsEachStallOnceWhileItLasts) {
    collector col;
    blitz::runtime rt(stall_config(col, 1, 10ms));
    const std::uint64_t bound = sample_bound(10ms);
    for (int i = 0; i < 2; ++i) {
        rt.block_on(
            [](blitz::runtime& r, collector& c, int before, std::uint64_t b) -> blitz::task<void> {
                spin_until_reported(r, c, before, b * 4 + answer_bound(10ms));
                // The same stall goes on for as many samples again: still one report.
                const std::uint64_t s = r.metrics().stall_samples;
                while (r.metrics().stall_samples - s < b) {
                    if (tsan) ::usleep(100);
                }
                co_return;
            }(rt, col, i, bound));
    }
    EXPECT_EQ(col.count.load(), 2);
    const auto m = rt.metrics();
    EXPECT_EQ(m.stalls, 2u);
    EXPECT_EQ(m.stalls_suppressed, 0u);
}

TEST(StallDetector, IdleAndProgressingWorkersAreNeverReported) {
    {
        // Idle: every worker parked for three stalls' worth of samples.
        collector col;
        blitz::runtime rt(stall_config(col, 2, 5ms));
        const std::uint64_t span = sample_bound(5ms) * 3;
        const std::uint64_t s0 = rt.metrics().stall_samples;
        while (rt.metrics().stall_samples - s0 < span) std::this_thread::sleep_for(1ms);
        EXPECT_EQ(col.count.load(), 0);
        EXPECT_EQ(rt.metrics().stalls, 0u);
    }
    {
        // Busy with short polls: a task that yields for as long, so polls keep completing. (A
        // poll the OS deschedules for the whole threshold would be a stall: the threshold is
        // far above what a loaded machine takes a thread away for.)
        collector col;
        blitz::runtime rt(stall_config(col, 2, 200ms));
        const std::uint64_t span = sample_bound(200ms) * 3;
        rt.block_on([](blitz::runtime& r, std::uint64_t n) -> blitz::task<void> {
            const std::uint64_t s = r.metrics().stall_samples;
            while (r.metrics().stall_samples - s < n) co_await blitz::yield_now();
        }(rt, span));
        EXPECT_EQ(col.count.load(), 0);
        EXPECT_EQ(rt.metrics().stalls, 0u);
    }
}

TEST(StallDetector, AParkedRuntimeLetsItDoze) {
    // Every worker parked (and no park timeout to wake them): the watchdog dozes, waiting a
    // whole threshold between samples instead of a sample period, so every sample it takes is
    // a doze sample (counted: the two counters move together, give or take the one being
    // taken while they are read).
    collector col;
    config c = stall_config(col, 1, 50ms);
    c.park_timeout = std::chrono::hours(1);
    blitz::runtime rt(c);
    auto m1 = rt.metrics();
    while (m1.stall_doze_samples == 0) {
        std::this_thread::sleep_for(5ms);
        m1 = rt.metrics();
    }
    auto m2 = m1;
    while (m2.stall_doze_samples - m1.stall_doze_samples < 3) {
        std::this_thread::sleep_for(5ms);
        m2 = rt.metrics();
    }
    EXPECT_LE(m2.stall_samples - m1.stall_samples,
              m2.stall_doze_samples - m1.stall_doze_samples + 1);
    EXPECT_EQ(m2.stall_nudges, m1.stall_nudges);  // nobody ran a poll
    // The first poll after an idle spell wakes it (a nudge). A poll that comes while the
    // watchdog is between a doze and its next sample finds it awake and needs no nudge, so
    // the spell is tried again: up to 8 times, each after a fresh doze sample (counted).
    bool nudged = false;
    for (int attempt = 0; attempt < 8 && !nudged; ++attempt) {
        const auto before = rt.metrics();
        auto m = before;
        while (m.stall_doze_samples == before.stall_doze_samples) {
            std::this_thread::sleep_for(5ms);
            m = rt.metrics();
        }
        rt.block_on([]() -> blitz::task<void> { co_return; }());
        nudged = rt.metrics().stall_nudges > m.stall_nudges;
    }
    EXPECT_TRUE(nudged) << "eight polls after idle spells never woke the dozing watchdog";
    // And a stall that begins then is found within the bound.
    std::uint64_t start = 0;
    rt.block_on([](blitz::runtime& r, collector& c, std::uint64_t& s) -> blitz::task<void> {
        s = r.metrics().stall_samples;
        spin_until_reported(r, c, 0, sample_bound(50ms) * 4 + answer_bound(50ms));
        co_return;
    }(rt, col, start));
    const auto reports = col.all();
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_LE(reports[0].detected_sample - start, sample_bound(50ms));
}

TEST(StallDetector, ZeroTurnsItOff) {
    config c;
    c.workers = 1;
    c.stall_threshold = 0ns;
    blitz::runtime rt(c);
    rt.block_on([]() -> blitz::task<void> {
        std::this_thread::sleep_for(20ms);
        co_return;
    }());
    const auto m = rt.metrics();
    EXPECT_EQ(m.stall_samples, 0u);
    EXPECT_EQ(m.stalls, 0u);
}

TEST(StallDetector, WithoutASignalItReportsTheWorkerWithoutTaskOrStack) {
    collector col;
    config c = stall_config(col, 1, 10ms);
    c.stall_signal = 0;
    blitz::runtime rt(c);
    rt.block_on([](blitz::runtime& r, collector& cl, std::uint64_t b) -> blitz::task<void> {
        spin_until_reported(r, cl, 0, b * 4 + answer_bound(10ms));
        co_return;
    }(rt, col, sample_bound(10ms)));
    const auto reports = col.all();
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].task_id, 0u);
    EXPECT_TRUE(reports[0].stack.empty());
    EXPECT_NE(reports[0].stack_note.find("stall_signal is 0"), std::string::npos);
}

TEST(StallDetector, TheDefaultHookWritesOneReadableBlock) {
    stall_report r;
    r.worker = 3;
    r.duration = 75ms;
    r.task_id = 42;
    r.spawn_site = std::source_location::current();
    r.spawn_site_known = true;
    r.queued_behind = 2;
    r.stack = {"#0 0x1 f()+0x1 (a.out)"};
    const std::string s = r.to_string();
    EXPECT_NE(s.find("worker 3 has been in one poll for at least 75 ms"), std::string::npos) << s;
    EXPECT_NE(s.find("task 42, spawned at"), std::string::npos) << s;
    EXPECT_NE(s.find("holding up 2 queued tasks"), std::string::npos) << s;
    EXPECT_NE(s.find("#0 0x1 f()+0x1 (a.out)"), std::string::npos) << s;
}

TEST(StallDetector, ConfigRejectsOutOfRangeValues) {
    config c;
    c.stall_threshold = 500us;
    EXPECT_THROW(c.validate(), blitz::config_error);
    c.stall_threshold = 50ms;
    c.stall_signal = SIGKILL;
    EXPECT_THROW(c.validate(), blitz::config_error);
    c.stall_signal = SIGRTMAX + 1;
    EXPECT_THROW(c.validate(), blitz::config_error);
    c.stall_signal = 0;
    EXPECT_NO_THROW(c.validate());
    c.stall_threshold = 0ns;
    EXPECT_NO_THROW(c.validate());
}

std::atomic<int> user_handler_calls{0};
void user_handler(int) { user_handler_calls.fetch_add(1); }

TEST(StallDetector, ASignalForAnotherThreadGoesToTheHandlerInstalledBefore) {
    // Installed before any runtime of this process installs the detector's handler for a signal
    // no other test uses, so the detector chains to it.
    const int sig = SIGRTMIN + 7;
    struct sigaction sa{}, old{};
    sa.sa_handler = user_handler;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(sig, &sa, &old), 0);
    {
        collector col;
        config c = stall_config(col, 1);
        c.stall_signal = sig;
        blitz::runtime rt(c);
        ::raise(sig);  // this thread is no worker: not a stall request
        EXPECT_EQ(user_handler_calls.load(), 1);
    }
    sigaction(sig, &old, nullptr);
}

std::atomic<int> capture_calls{0};
[[gnu::noinline]] std::size_t capture_here(void** pcs, std::size_t n) {
    const std::size_t got = blitz::detail::capture_stack(pcs, n);
    capture_calls.fetch_add(1);  // keeps the call from being a tail call (this frame stays)
    return got;
}

TEST(StackTrace, CapturesAndNamesTheCallersFrames) {
    void* pcs[32];
    const std::size_t n = capture_here(pcs, 32);
    ASSERT_GE(n, 2u);
    const auto lines = blitz::detail::symbolize(pcs, n);
    ASSERT_EQ(lines.size(), n);
    EXPECT_NE(lines[0].find("capture_here"), std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].rfind("#0 0x", 0), 0u) << lines[0];
}

}  // namespace
