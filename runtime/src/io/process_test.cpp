// SPDX-License-Identifier: MIT
// Child processes (issue 17) on the pidfd path (both backends) and the forced SIGCHLD path:
// status and output, errors, kill, pipes both ways, environment and directory, dropped children
// reaped, kill_on_drop, a child nobody reads from, and writes to a child that is gone.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/processes.hpp"
#include "blitz_testing/workloads.hpp"

namespace blitz {
namespace {

using namespace std::chrono_literals;
using process::command;
using process::stdio;

struct path_case {
    io_backend_kind backend;
    bool sigchld;
    const char* name;
};

class Process : public ::testing::TestWithParam<path_case> {
protected:
    config cfg(unsigned workers = 2) const {
        config c;
        c.workers = workers;
        c.io_backend = GetParam().backend;
        c.process_wait_sigchld = GetParam().sigchld;
        return c;
    }
};

using workloads::bytes_of;

using workloads::pid_gone;
bool all_gone_within(const std::vector<pid_t>& pids, std::chrono::seconds limit = 20s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
        bool all = true;
        for (pid_t p : pids) all = all && pid_gone(p);
        if (all) return true;
        if (std::chrono::steady_clock::now() > until) return false;
        process::reap_orphans();
        std::this_thread::sleep_for(2ms);
    }
}

TEST_P(Process, StatusAndOutput) {
    runtime rt(cfg());
    auto out = rt.block_on([]() -> task<io_result<process::captured>> {
        co_return co_await command("sh").arg("-c").arg("echo out; echo err >&2; exit 3").output();
    }());
    ASSERT_TRUE(out.ok()) << out.error().message();
    EXPECT_EQ(out->out, "out\n");
    EXPECT_EQ(out->err, "err\n");
    EXPECT_EQ(out->status.code, 3);
    EXPECT_FALSE(out->status.success());
    auto ok = rt.block_on([]() -> task<io_result<process::exit_status>> {
        co_return co_await command("true").status();
    }());
    ASSERT_TRUE(ok.ok());
    EXPECT_TRUE(ok->success());
}

TEST_P(Process, MissingProgramsAreErrors) {
    runtime rt(cfg());
    rt.block_on([]() -> task<void> {
        auto a = command("/nonexistent/program").spawn();
        EXPECT_FALSE(a.ok());
        if (!a.ok()) {
            EXPECT_EQ(a.error(), std::errc::no_such_file_or_directory);
        }
        auto b = command("blitz-no-such-program-anywhere").spawn();
        EXPECT_FALSE(b.ok());
        const std::string plain = "/tmp/blitz-not-executable-" + std::to_string(::getpid());
        ::close(::open(plain.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644));
        auto c = command(plain).spawn();  // a file without execute permission
        ::unlink(plain.c_str());
        EXPECT_FALSE(c.ok());
        if (!c.ok()) {
            EXPECT_EQ(c.error(), std::errc::permission_denied);
        }
        co_return;
    }());
}

TEST_P(Process, KillEndsTheChildWithTheSignal) {
    runtime rt(cfg());
    auto st = rt.block_on([]() -> task<io_result<process::exit_status>> {
        auto c = command("sleep").arg("30").spawn();
        EXPECT_TRUE(c.ok());
        EXPECT_TRUE(c->kill().ok());
        auto s = co_await c->wait();
        EXPECT_FALSE(c->kill().ok());  // reaped: no such process any more
        co_return s;
    }());
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->signal, SIGKILL);
}

TEST_P(Process, PipesBothWays) {
    runtime rt(cfg());
    const std::string got = rt.block_on([]() -> task<std::string> {
        auto c = command("cat").stdin_(stdio::piped).stdout_(stdio::piped).spawn();
        EXPECT_TRUE(c.ok());
        std::string text;
        for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i) + "\n";
        auto writer = spawn([](process::pipe_stream in, std::string text) -> task<void> {
            EXPECT_TRUE(co_await in.write_all(bytes_of(text)));
        }(std::move(*c->stdin_pipe), text));
        c->stdin_pipe.reset();
        auto all = co_await c->stdout_pipe->read_to_end();
        co_await writer;
        auto st = co_await c->wait();
        EXPECT_TRUE(st.ok() && st->success());
        EXPECT_EQ(all.value().size(), text.size());
        co_return all.value() == text ? "same" : "differs";
    }());
    EXPECT_EQ(got, "same");
}

TEST_P(Process, EnvironmentAndDirectory) {
    runtime rt(cfg());
    auto out = rt.block_on([]() -> task<io_result<process::captured>> {
        co_return co_await command("sh")
            .arg("-c")
            .arg("echo \"$BLITZ_A|$HOME\"; pwd")
            .env("BLITZ_A", "x y")
            .env_remove("HOME")
            .cwd("/")
            .output();
    }());
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->out, "x y|\n/\n");
    auto bare = rt.block_on([]() -> task<io_result<process::captured>> {
        co_return co_await command("/usr/bin/env").env_clear().env("ONLY", "1").output();
    }());
    ASSERT_TRUE(bare.ok());
    EXPECT_EQ(bare->out, "ONLY=1\n");
    auto bad_dir = rt.block_on([]() -> task<io_result<process::captured>> {
        co_return co_await command("true").cwd("/nonexistent-dir").output();
    }());
    EXPECT_FALSE(bad_dir.ok());
}

TEST_P(Process, DroppedChildrenAreReaped) {
    runtime rt(cfg());
    const std::vector<pid_t> pids = rt.block_on([]() -> task<std::vector<pid_t>> {
        std::vector<pid_t> pids;
        for (int i = 0; i < 20; ++i) {
            auto c = command("sleep").arg(i % 2 ? "0.02" : "0").spawn();
            EXPECT_TRUE(c.ok());
            if (c) pids.push_back(c->id());
        }  // each dropped unwaited
        co_await sleep(100ms);
        co_return pids;
    }());
    EXPECT_TRUE(all_gone_within(pids)) << "a dropped child stayed a zombie";
}

TEST_P(Process, KillOnDrop) {
    runtime rt(cfg());
    const pid_t pid = rt.block_on([]() -> task<pid_t> {
        auto c = command("sleep").arg("100").kill_on_drop(true).spawn();
        EXPECT_TRUE(c.ok());
        co_return c->id();
    }());
    EXPECT_TRUE(all_gone_within({pid}));
}

// A child blocked writing to a pipe nobody reads blocks only itself: the runtime's other tasks
// run, and a wait for it simply does not end (here: a timeout).
TEST_P(Process, AnUnreadStdoutDoesNotStallTheRuntime) {
    runtime rt(cfg());
    const pid_t pid = rt.block_on([]() -> task<pid_t> {
        auto c = command("head")
                     .arg("-c")
                     .arg("4000000")
                     .arg("/dev/zero")
                     .stdout_(stdio::piped)
                     .kill_on_drop(true)
                     .spawn();
        EXPECT_TRUE(c.ok());
        auto other = spawn([]() -> task<int> {
            co_await sleep(5ms);
            co_return 7;
        }());
        auto t = co_await timeout(100ms, c->wait());
        EXPECT_TRUE(t.timed_out());
        EXPECT_EQ(co_await other, 7);
        co_return c->id();
    }());
    EXPECT_TRUE(all_gone_within({pid}));
}

TEST_P(Process, WritingToAChildThatExitedIsBrokenPipe) {
    runtime rt(cfg());
    rt.block_on([]() -> task<void> {
        auto c = command("true").stdin_(stdio::piped).spawn();
        EXPECT_TRUE(c.ok());
        auto in = std::move(*c->stdin_pipe);
        c->stdin_pipe.reset();
        auto st = co_await c->wait();
        EXPECT_TRUE(st.ok());
        const std::string big(1 << 20, 'x');
        auto w = co_await in.write_all(bytes_of(big));
        EXPECT_FALSE(w.ok());
        if (!w.ok()) {
            EXPECT_EQ(w.error(), std::errc::broken_pipe);
        }
    }());
}

INSTANTIATE_TEST_SUITE_P(Io, Process,
                         ::testing::Values(path_case{io_backend_kind::epoll, false, "epoll_pidfd"},
                                           path_case{io_backend_kind::prefer_io_uring, false,
                                                     "prefer_io_uring_pidfd"},
                                           path_case{io_backend_kind::epoll, true, "sigchld"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace blitz
