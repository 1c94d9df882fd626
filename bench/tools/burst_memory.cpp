// SPDX-License-Identifier: MIT
// burst_memory: does a server's memory come back after bursts of connections (issue 45)? A
// 4-worker runtime takes `bursts` bursts; in each, one task spawns `tasks` tasks whose frames
// hold a 16 KiB buffer (a connection's), all listed by the spawner's worker, and ends; a plain
// thread then wakes them all (through the global queue, so they complete on every worker) and
// waits for the runtime to be at rest. After each burst it prints the live task blocks (the
// runtime's allocation count) and the resident set (/proc/self/statm).
//   burst_memory [--bursts N] [--tasks N]      (defaults 30 and 2,000)

#include <unistd.h>

#include <array>
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

// Keeps the compiler from shrinking the buffer: it may be read and written through `p`.
void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

blitz::task<void> connection(blitz::cancellation_token done) {
    std::array<char, 16 * 1024> buf;  // in the frame, as a connection's read buffer would be
    std::memset(buf.data(), 1, buf.size());
    escape(buf.data());
    co_await done.cancelled();
    escape(buf.data());
}

// At rest: every worker parked and nobody searching, twice in a row (bounded attempts).
void settle(blitz::runtime& rt) {
    for (int i = 0; i < 100'000; ++i) {
        const auto m = rt.metrics();
        if (m.num_parked == rt.num_workers() && m.num_searching == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            const auto n = rt.metrics();
            if (n.num_parked == rt.num_workers() && n.num_searching == 0) return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

}  // namespace

int main(int argc, char** argv) {
    int bursts = 30, tasks = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--bursts") == 0) bursts = std::atoi(argv[i + 1]);
        if (std::strcmp(argv[i], "--tasks") == 0) tasks = std::atoi(argv[i + 1]);
    }
    blitz::config c;
    c.workers = 4;
    blitz::runtime rt(c);
    settle(rt);
    std::printf("burst,live_blocks,rss_mib\n");
    std::printf("0,%llu,%.1f\n", static_cast<unsigned long long>(rt.metrics().tasks_alive),
                static_cast<double>(rss_bytes()) / (1 << 20));
    for (int b = 1; b <= bursts; ++b) {
        blitz::cancellation_token done;
        rt.block_on([](blitz::cancellation_token done, int n) -> blitz::task<void> {
            for (int i = 0; i < n; ++i) (void)blitz::spawn(connection(done));
            co_return;
        }(done, tasks));
        settle(rt);  // the spawner's worker parks with the burst listed
        done.cancel();
        settle(rt);
        std::printf("%d,%llu,%.1f\n", b, static_cast<unsigned long long>(rt.metrics().tasks_alive),
                    static_cast<double>(rss_bytes()) / (1 << 20));
    }
}
