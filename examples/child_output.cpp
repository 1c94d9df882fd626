// SPDX-License-Identifier: MIT
// Runs a child process and streams its output line by line as it arrives, while the runtime
// keeps doing other work; then collects a second child's whole output with output(). Exit
// status 0 when both children said what was expected.
//
//   example_child_output            automatic backend
//   example_child_output epoll      force epoll
//   example_child_output io_uring   io_uring where the kernel allows it, else epoll
//   example_child_output sigchld    await children on SIGCHLD instead of pidfds

#include <blitz/blitz.hpp>
#include <cstdio>
#include <cstring>
#include <string>

namespace process = blitz::process;

// Prints each complete line of `p` as it comes; returns how many there were.
blitz::task<int> stream_lines(process::pipe_stream& p) {
    std::string pending;
    std::byte buf[4096];
    int lines = 0;
    for (;;) {
        auto n = co_await p.read(buf);
        if (!n || *n == 0) co_return lines;
        pending.append(reinterpret_cast<const char*>(buf), *n);
        for (std::size_t end; (end = pending.find('\n')) != std::string::npos;) {
            std::printf("child says: %s\n", pending.substr(0, end).c_str());
            pending.erase(0, end + 1);
            ++lines;
        }
    }
}

blitz::task<bool> run() {
    // A child that prints five lines, 20 ms apart.
    auto c = process::command("sh")
                 .arg("-c")
                 .arg("for i in 1 2 3 4 5; do echo line $i; sleep 0.02; done")
                 .stdout_(process::stdio::piped)
                 .spawn();
    if (!c) {
        std::fprintf(stderr, "spawn: %s\n", c.error().message().c_str());
        co_return false;
    }
    // Other work meanwhile: a ticker on the same runtime.
    auto ticker = blitz::spawn([]() -> blitz::task<int> {
        int ticks = 0;
        for (; ticks < 5; ++ticks) co_await blitz::sleep(std::chrono::milliseconds(10));
        co_return ticks;
    }());
    const int lines = co_await stream_lines(*c->stdout_pipe);
    auto status = co_await c->wait();
    const int ticks = co_await ticker;
    std::printf("%d lines, status %d, %d ticks meanwhile\n", lines, status ? status->code : -1,
                ticks);
    // The whole output at once.
    auto all = co_await process::command("uname").arg("-s").output();
    if (!all) {
        std::fprintf(stderr, "uname: %s\n", all.error().message().c_str());
        co_return false;
    }
    std::printf("uname -s: %s", all->out.c_str());
    co_return lines == 5 && status && status->success() && all->status.success() &&
        all->out == "Linux\n";
}

int main(int argc, char** argv) {
    blitz::config cfg;
    cfg.workers = 2;
    if (argc > 1 && std::strcmp(argv[1], "epoll") == 0)
        cfg.io_backend = blitz::io_backend_kind::epoll;
    if (argc > 1 && std::strcmp(argv[1], "io_uring") == 0)  // where the kernel allows it
        cfg.io_backend = blitz::io_backend_kind::prefer_io_uring;
    if (argc > 1 && std::strcmp(argv[1], "sigchld") == 0) cfg.process_wait_sigchld = true;
    blitz::runtime rt(cfg);
    const bool ok = rt.block_on(run());
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
