// SPDX-License-Identifier: MIT
// futex_wake: what parking costs on this machine. A thread sleeps on a futex word; another
// wakes it after 1 ms of quiet and waits for its reply. Reports the one-way latency (wake call
// to the sleeper running) and the round trip, p50 and p99, for three placements: both threads
// unpinned, both on one CPU, and on two different CPUs (an idle CPU must be woken first; in a
// VM that is an inter-processor interrupt through the hypervisor). Used by
// results/<machine>/parking.md; run `build/release/futex_wake`.

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

void futex_wait(std::atomic<std::uint32_t>& w, std::uint32_t expected) {
    syscall(SYS_futex, &w, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<std::uint32_t>& w) {
    syscall(SYS_futex, &w, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void pin(int cpu) {
    if (cpu < 0) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

double pct(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

void run(const char* label, int waker_cpu, int sleeper_cpu, int rounds) {
    std::atomic<std::uint32_t> word{0}, reply{0};
    std::atomic<std::int64_t> sent{0};
    std::vector<double> one_way, round_trip;
    std::thread sleeper([&] {
        pin(sleeper_cpu);
        for (int i = 0; i < rounds; ++i) {
            while (word.load(std::memory_order_acquire) == 0) futex_wait(word, 0);
            one_way.push_back(double(clk::now().time_since_epoch().count() - sent.load()));
            word.store(0);
            reply.store(1, std::memory_order_release);
            futex_wake(reply);
        }
    });
    pin(waker_cpu);
    for (int i = 0; i < rounds; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const auto t0 = clk::now();
        sent.store(t0.time_since_epoch().count());
        word.store(1, std::memory_order_release);
        futex_wake(word);
        while (reply.load(std::memory_order_acquire) == 0) futex_wait(reply, 0);
        round_trip.push_back(double((clk::now() - t0).count()));
        reply.store(0);
    }
    sleeper.join();
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", label, pct(one_way, 0.5) / 1e3,
                pct(one_way, 0.99) / 1e3, pct(round_trip, 0.5) / 1e3, pct(round_trip, 0.99) / 1e3);
}

}  // namespace

int main() {
    const int rounds = 1000;
    std::printf(
        "| placement | one-way p50 (us) | one-way p99 (us) | round trip p50 (us) | round trip p99 "
        "(us) |\n"
        "|---|---|---|---|---|\n");
    run("unpinned", -1, -1, rounds);
    run("same CPU (0, 0)", 0, 0, rounds);
    if (std::thread::hardware_concurrency() > 1) run("two CPUs (0 wakes 1)", 0, 1, rounds);
    return 0;
}
