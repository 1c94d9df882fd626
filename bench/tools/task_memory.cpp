// SPDX-License-Identifier: MIT
// task_memory: what a live task costs in memory (issue 21). A plain thread spawns N tasks into
// a one-worker runtime and reads, with all N alive at once:
//   block   bytes of the task's one allocation ([result slot | header | frame]) from the
//           runtime's count of task allocations (task_bytes_allocated / task_allocations)
//   RSS     the growth of the resident set (/proc/self/statm) over the N spawns, per task: the
//           block as allocated (the per-thread block cache rounds it up to its 64-byte class)
//           plus the allocator's own overhead
// Rows: tasks whose frames hold nothing and tasks that hold one int, both queued behind the
// worker held in a poll (never run); and tasks that ran once and wait in a notify (their frames
// hold the awaiter). Spawned detached, so no join handle is counted; each row in its own process.
//   task_memory [--tasks N]      (default 1,000,000)

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "blitz/blitz.hpp"
#include "proc_rss.hpp"

namespace {

using bench_tools::rss_bytes;

blitz::task<void> empty() { co_return; }
blitz::task<int> holds_int(int x) { co_return x + 1; }
blitz::task<void> waits(blitz::notify& n) { co_await n.notified(); }

blitz::task<void> hold_worker(std::atomic<bool>& hold, std::atomic<bool>& held) {
    held.store(true, std::memory_order_release);
    while (hold.load(std::memory_order_acquire)) std::this_thread::yield();
    co_return;
}

// `queued`: spawn behind a held worker (the tasks never run while measured); otherwise let them
// run to their first suspension (the notify) and measure them waiting.
template <class Spawn>
void measure(const char* what, unsigned long n, bool queued, Spawn spawn_one) {
    blitz::config c;
    c.workers = 1;
    blitz::runtime rt(c);
    blitz::notify wake;
    std::atomic<bool> hold{true}, held{false};
    if (queued) {
        rt.spawn(hold_worker(hold, held)).detach();
        while (!held.load(std::memory_order_acquire)) std::this_thread::yield();
    }
    const blitz::runtime_metrics m0 = rt.metrics();
    const std::uint64_t rss0 = rss_bytes();
    for (unsigned long i = 0; i < n; ++i) spawn_one(rt, wake, i);
    if (!queued) {
        while (rt.metrics().total(&blitz::worker_metrics::polls) <
               m0.total(&blitz::worker_metrics::polls) + n)
            std::this_thread::yield();
    }
    const std::uint64_t rss1 = rss_bytes();
    const blitz::runtime_metrics m1 = rt.metrics();
    const double allocs = double(m1.task_allocations - m0.task_allocations);
    const double block = double(m1.task_bytes_allocated - m0.task_bytes_allocated) / allocs;
    const double rss = double(rss1 - rss0) / double(n);
    std::printf("| %s | %lu | %.0f | %.0f |\n", what, n, block, rss);
    hold.store(false, std::memory_order_release);
    wake.notify_all();
    std::fflush(stdout);
}

// Each row runs in a child process of its own, so one row's freed memory (which the allocator
// keeps) is not reused by the next row's spawns.
template <class Spawn>
void in_child(const char* what, unsigned long n, bool queued, Spawn spawn_one) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        measure(what, n, queued, spawn_one);
        std::_Exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "task_memory: the row '%s' failed\n", what);
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    unsigned long n = 1'000'000;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--tasks") == 0 && i + 1 < argc) {
            n = std::strtoul(argv[++i], nullptr, 10);
        } else {
            std::fprintf(stderr, "usage: task_memory [--tasks N]\n");
            return 2;
        }
    }
    if (n == 0) {
        std::fprintf(stderr, "task_memory: --tasks must be at least 1\n");
        return 2;
    }
    std::printf("| task | live tasks | block (B) | RSS per task (B) |\n|---|---|---|---|\n");
    in_child("empty frame, queued", n, true,
             [](blitz::runtime& rt, blitz::notify&, unsigned long) { rt.spawn(empty()).detach(); });
    in_child("holds an int, queued", n, true,
             [](blitz::runtime& rt, blitz::notify&, unsigned long i) {
                 rt.spawn(holds_int(static_cast<int>(i))).detach();
             });
    in_child(
        "waits in a notify", n, false,
        [](blitz::runtime& rt, blitz::notify& w, unsigned long) { rt.spawn(waits(w)).detach(); });
    return 0;
}
