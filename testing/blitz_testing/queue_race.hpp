// SPDX-License-Identifier: MIT
#pragma once
// A race on the global injection queue (G1 as amended by issue 21): producer threads push
// single tasks and short chains with no lock while consumer threads fetch shares under the
// consumers' lock. Every task must come out exactly once, and each producer's tasks in the order
// it pushed them. Used by the G1 checker, the unit tests and the TSan stress test.

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "blitz_testing/test_support.hpp"
#include "sched/global_queue.hpp"
#include "task/task_access.hpp"

namespace blitz::detail::testing {

struct queue_race_result {
    std::uint64_t fetched = 0;     // tasks that came out
    std::uint64_t duplicates = 0;  // tasks that came out more than once
    std::uint64_t lost = 0;        // tasks pushed that never came out
    std::uint64_t out_of_order =
        0;  // a producer's task seen after a later one of the same producer
    // Fetches that got nothing although len() was non-zero just before: another consumer took
    // the tasks, or a push was in flight.
    std::uint64_t empty_fetches = 0;
    std::string first;  // the first problem, in words
};

// `producers` threads push `per_producer` tasks each (chains of 1 to 3), `consumers` threads fetch
// shares of up to 8 until every task came out. Producer p's task i is pool index p * per + i.
inline queue_race_result global_queue_race(unsigned producers, unsigned consumers,
                                           std::uint32_t per_producer) {
    const std::size_t total = std::size_t{producers} * per_producer;
    header_pool pool(total);
    detail::global_queue g;
    std::vector<std::atomic<std::uint32_t>> seen(total);
    // Per consumer and producer: the highest index taken so far (per-producer order check: a
    // consumer's fetches are serialized by the lock, so across consumers order is only checked
    // through the queue's own FIFO, which the single-threaded part of G1 covers).
    std::atomic<std::uint64_t> fetched{0}, empties{0};
    std::atomic<unsigned> producing{producers};
    std::vector<std::uint64_t> disorder(consumers, 0);
    std::vector<std::thread> ts;
    for (unsigned p = 0; p < producers; ++p) {
        ts.emplace_back([&, p] {
            std::uint32_t i = 0;
            while (i < per_producer) {
                const std::uint32_t n =
                    std::min<std::uint32_t>(1 + (i * 7 + p) % 3, per_producer - i);
                task_header* first = pool.at(std::size_t{p} * per_producer + i);
                for (std::uint32_t k = 0; k + 1 < n; ++k) {
                    detail::task_access::queue_next(*pool.at(std::size_t{p} * per_producer + i + k))
                        .store(pool.at(std::size_t{p} * per_producer + i + k + 1),
                               std::memory_order_relaxed);
                }
                g.push_batch(first, pool.at(std::size_t{p} * per_producer + i + n - 1), n);
                i += n;
            }
            producing.fetch_sub(1, std::memory_order_release);
        });
    }
    for (unsigned c = 0; c < consumers; ++c) {
        ts.emplace_back([&, c] {
            std::vector<std::int64_t> last(producers, -1);
            task_header* out[8];
            while (fetched.load(std::memory_order_relaxed) < total) {
                const bool nonempty = !g.empty();
                const std::uint32_t n = g.pop_share(out, 8, consumers, 1, 8);
                if (n == 0) {
                    // Every push done and its length taken back: nothing more will come (a
                    // lost task ends the race here instead of hanging it).
                    if (producing.load(std::memory_order_acquire) == 0 && g.len() == 0) break;
                    if (nonempty) empties.fetch_add(1, std::memory_order_relaxed);
                    std::this_thread::yield();
                    continue;
                }
                for (std::uint32_t k = 0; k < n; ++k) {
                    const std::size_t idx = pool.index_of(out[k]);
                    seen[idx].fetch_add(1, std::memory_order_relaxed);
                    const auto prod = static_cast<unsigned>(idx / per_producer);
                    const auto pos = static_cast<std::int64_t>(idx % per_producer);
                    if (pos < last[prod]) ++disorder[c];
                    last[prod] = pos;
                }
                fetched.fetch_add(n, std::memory_order_relaxed);
            }
        });
    }
    for (auto& t : ts) t.join();
    queue_race_result r;
    r.fetched = fetched.load();
    r.empty_fetches = empties.load();
    for (std::size_t i = 0; i < total; ++i) {
        const std::uint32_t s = seen[i].load();
        if (s == 0) ++r.lost;
        if (s > 1) r.duplicates += s - 1;
        if (s != 1 && r.first.empty())
            r.first = "task " + std::to_string(i) + " came out " + std::to_string(s) + " times";
    }
    for (std::uint64_t d : disorder) r.out_of_order += d;
    if (r.out_of_order && r.first.empty()) r.first = "a producer's tasks came out of order";
    if (g.len() != 0 && r.first.empty())
        r.first = "len() is " + std::to_string(g.len()) + " at the end";
    return r;
}

}  // namespace blitz::detail::testing
