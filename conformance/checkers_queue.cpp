// SPDX-License-Identifier: MIT
// Q: the local run queue. Q1-Q3 drive one ring against a deque model (a paused thief stands in
// for concurrent stealing, so every interleaving point is chosen by the seed); Q6 runs the ring
// with real thieves plus runtime-level exactly-once oracles; Q7 reads victim walks from probes.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/scenarios.hpp"
#include "blitz_testing/settle.hpp"
#include "blitz_testing/test_event.hpp"
#include "blitz_testing/wheel_model.hpp"
#include "blitz_testing/workloads.hpp"
#include "checker_util.hpp"
#include "registry.hpp"
#include "sched/global_queue.hpp"
#include "sched/local_queue.hpp"
#include "task/task_access.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;

using detail::global_queue;
using detail::local_queue;
using detail::task_header;

// A pool of inert task headers, grown on demand: queues only move pointers, so each header
// carries its tag in a field the queues never touch (task_access::tag).
struct tags {
    explicit tags(std::size_t n = 0) {
        while (pool.size() < n) (*this)[pool.size()];
    }
    task_header* operator[](std::size_t i) {
        while (pool.size() <= i) {
            pool.emplace_back();
            detail::task_access::tag(pool.back()) = static_cast<std::uint32_t>(pool.size() - 1);
        }
        return &pool[i];
    }
    static std::size_t of(const task_header* t) { return detail::task_access::tag(*t); }
    std::deque<task_header> pool;
};

struct ring_check {
    std::uint64_t ops = 0;
    std::string bad;  // first mismatch, empty if none
};

// Runs `ops` random operations on a ring that starts at index `start`: owner pushes and pops,
// and a paused thief's claim/release (debug_claim). A deque models the expected contents: every
// removal, by pop or by claim, must take the oldest tasks (Q3), the length must match, and the
// slots in use (span, counting those being copied) must stay <= 256 (Q1). Pushes past a full ring
// are allowed while a claim is open, so Q1's edge is exercised.
ring_check ring_against_model(std::uint64_t seed, std::uint32_t start, local_queue::faults f,
                              int ops) {
    detail::fast_rng r(detail::mix_seed(seed));
    auto q = std::make_unique<local_queue>(start);
    q->set_faults(f);
    global_queue g;
    tags pool;
    std::deque<std::size_t> model;
    std::size_t next = 0;
    std::uint32_t claimed = 0;  // tasks held by the paused thief
    ring_check out;
    auto fail = [&](const std::string& what) {
        if (out.bad.empty()) out.bad = what + " (seed " + std::to_string(seed) + ")";
    };
    // One owner push. A full ring with a steal in progress sends the task to the global queue
    // (Q4), outside the model; the span must stay <= 256 either way (Q1).
    auto push_one = [&] {
        if (claimed > 0 && q->span() >= local_queue::capacity) {
            if (q->push(pool[next], g).overflowed != 1) {
                fail("a push into a full ring during a steal stayed in the ring");
            }
            ++next;
        } else {
            q->push(pool[next], g);
            model.push_back(next++);
        }
        if (q->span() > local_queue::capacity) {
            fail("ring span " + std::to_string(q->span()) + " > 256");
        }
    };
    for (int i = 0; i < ops && out.bad.empty(); ++i) {
        const unsigned kind = r.bounded(10);
        if (kind < 5) {
            // Keep the ring below full unless a claim is open, so overflow stays out of the model.
            if (model.size() + claimed >= local_queue::capacity && claimed == 0) continue;
            push_one();
        } else if (kind < 8) {
            task_header* t = q->pop();
            if (model.empty()) {
                if (t) fail("pop returned a task from an empty ring");
            } else if (!t) {
                fail("pop found nothing with " + std::to_string(model.size()) + " tasks queued");
            } else if (pool.of(t) != model.front()) {
                fail("pop returned task " + std::to_string(pool.of(t)) + ", oldest was " +
                     std::to_string(model.front()));
            } else {
                model.pop_front();
            }
        } else if (kind == 8 && claimed == 0) {
            task_header* got[128];
            const std::uint32_t want = 1 + r.bounded(128);
            const std::uint32_t k = q->debug_claim(want, got);
            if (k != std::min<std::uint32_t>(want, static_cast<std::uint32_t>(model.size()))) {
                fail("a claim took " + std::to_string(k));
            }
            for (std::uint32_t j = 0; j < k && out.bad.empty(); ++j) {
                if (pool.of(got[j]) != model.front()) fail("a claim took a task out of order");
                model.pop_front();
            }
            claimed = k;
            // With the claim open, often push the ring to (and past) full: the edge Q1 guards.
            if (k > 0 && r.bounded(2) == 0) {
                const int extra = static_cast<int>(local_queue::capacity - model.size()) + 8;
                for (int j = 0; j < extra && out.bad.empty(); ++j) push_one();
            }
        } else if (claimed > 0) {
            q->debug_release();
            claimed = 0;
        }
        ++out.ops;
        if (out.bad.empty() &&
            q->len() != std::min<std::size_t>(model.size(), local_queue::capacity)) {
            fail("len " + std::to_string(q->len()) + " != model " + std::to_string(model.size()));
        }
    }
    return out;
}

// Runs the ring model `rounds` times (40 quick, 400 full) with seeds from `salt` and starting
// indices from `start_of(seed)`.
template <class Start>
outcome ring_rounds(const run_params& p, std::uint64_t salt, Start&& start_of,
                    local_queue::faults f) {
    outcome o;
    const int rounds = p.quick ? 40 : 400;
    for (int k = 0; k < rounds; ++k) {
        const std::uint64_t seed = p.seed * salt + k;
        const auto c = ring_against_model(seed, start_of(seed), f, 3000);
        ++o.runs;
        o.events += c.ops;
        if (!c.bad.empty()) forbid(o, c.bad);
    }
    return o;
}

// Q1: the ring never holds more than 256 slots, counting those a thief is still copying.
// Control: the owner's full check uses the real head, ignoring a steal in progress.
outcome check_q1(const run_params& p, bool faulty) {
    return ring_rounds(
        p, 7919,
        [](std::uint64_t seed) { return static_cast<std::uint32_t>(detail::mix_seed(seed)); },
        {.full_check_uses_real_head = faulty});
}

// Q2: the packed head (two 32-bit indices in one 64-bit word) and the 32-bit tail work across the
// 2^32 wrap. Rings start a few hundred indices before it. Control: pop compares indices with <.
outcome check_q2(const run_params& p, bool faulty) {
    outcome pack_checks;
    for (std::uint32_t s : {0u, 1u, 0xFFFFFFFFu, 0x80000000u}) {
        for (std::uint32_t r : {0u, 1u, 0xFFFFFFFFu, 0x7FFFFFFFu}) {
            ++pack_checks.events;
            const std::uint64_t h = local_queue::pack(s, r);
            if (local_queue::steal_of(h) != s || local_queue::real_of(h) != r) {
                forbid(pack_checks, "pack/unpack lost an index");
            }
        }
    }
    outcome o =
        ring_rounds(p, 104729,
                    [](std::uint64_t seed) {
                        return 0u - 1u - static_cast<std::uint32_t>(detail::mix_seed(seed) % 600);
                    },
                    {.pop_compares_indices = faulty});
    o.events += pack_checks.events;
    o.violations += pack_checks.violations;
    if (o.detail.empty()) o.detail = pack_checks.detail;
    return o;
}

// Q3: the owner pops the oldest task (FIFO); claims take the oldest too. Control: the owner pops
// its newest task.
outcome check_q3(const run_params& p, bool faulty) {
    return ring_rounds(
        p, 15485863,
        [](std::uint64_t seed) { return static_cast<std::uint32_t>(seed * 2654435761u); },
        {.pop_from_tail = faulty});
}

// One concurrent round of Q6: the owner pushes `n` tagged tasks with random pops in between while
// `thieves` threads steal into their own rings and drain them; overflow goes to a global queue.
// Returns how many tags were not seen exactly once.
std::size_t conservation_round(std::uint64_t seed, std::uint32_t start, std::size_t n,
                               unsigned thieves, local_queue::faults f, std::string& first) {
    tags pool(n);
    std::vector<std::atomic<std::uint8_t>> seen(n);
    auto victim = std::make_unique<local_queue>(start);
    victim->set_faults(f);
    global_queue g;
    std::atomic<bool> stop{false};
    auto record = [&](task_header* t) { seen[pool.of(t)].fetch_add(1, std::memory_order_relaxed); };
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < thieves; ++i) {
        ts.emplace_back([&, i] {
            auto mine = std::make_unique<local_queue>(start + 77 * i);
            auto drain = [&] {
                while (task_header* t = mine->pop()) record(t);
            };
            while (!stop.load(std::memory_order_acquire)) {
                auto s = victim->steal_into(*mine, 128);
                if (s.first) record(s.first);
                drain();
            }
            auto s = victim->steal_into(*mine, 128);
            if (s.first) record(s.first);
            drain();
        });
    }
    detail::fast_rng r(detail::mix_seed(seed));
    for (std::size_t i = 0; i < n; ++i) {
        victim->push(pool[i], g);
        if (r.bounded(3) == 0) {
            if (task_header* t = victim->pop()) record(t);
        }
    }
    stop.store(true, std::memory_order_release);
    for (auto& t : ts) t.join();
    while (task_header* t = victim->pop()) record(t);
    while (task_header* t = g.pop()) record(t);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned c = seen[i].load(std::memory_order_relaxed);
        if (c != 1) {
            if (bad++ == 0) {
                first = "task " + std::to_string(i) + " ran " + std::to_string(c) +
                        " times (seed " + std::to_string(seed) + ")";
            }
        }
    }
    return bad;
}

// Q6: every task pushed is executed exactly once under concurrent owner push/pop and thieves
// (tagged ring tasks, half of the rounds across the 2^32 wrap), and end to end in the runtime
// (tagged tasks with a bitset; the skynet sum). Control: a thief copies n tasks but claims n - 1.
outcome check_q6(const run_params& p, bool faulty) {
    outcome o;
    const int rounds = p.quick ? 4 : 20;
    const std::size_t n = p.quick ? 20'000 : 200'000;
    const unsigned thieves = std::clamp(p.workers, 1u, 4u);
    for (int k = 0; k < rounds; ++k) {
        const std::uint64_t seed = p.seed * 31 + k;
        const std::uint32_t start = (k % 2) ? 0u - 1000u : static_cast<std::uint32_t>(seed);
        std::string first;
        const std::size_t bad =
            conservation_round(seed, start, n, thieves, {.steal_claims_one_less = faulty}, first);
        ++o.runs;
        o.events += n;
        if (bad) forbid(o, std::to_string(bad) + " ring tasks not run exactly once; " + first);
    }
    if (faulty) return o;  // the fault lives in the ring; the runtime part has no control
    config c = fresh(p.workers);
    runtime rt(c);
    const std::size_t tagged = p.quick ? 20'000 : 200'000;
    std::vector<std::atomic<std::uint8_t>> ran(tagged);
    rt.block_on([](std::vector<std::atomic<std::uint8_t>>& ran) -> task<void> {
        std::vector<join_handle<void>> hs;
        const std::size_t groups = 100, per = ran.size() / groups;
        for (std::size_t gi = 0; gi < groups; ++gi) {
            hs.push_back(spawn([](std::vector<std::atomic<std::uint8_t>>& ran, std::size_t from,
                                  std::size_t to) -> task<void> {
                std::vector<join_handle<void>> inner;
                for (std::size_t i = from; i < to; ++i) {
                    inner.push_back(spawn([](std::atomic<std::uint8_t>& b) -> task<void> {
                        b.fetch_add(1, std::memory_order_relaxed);
                        co_return;
                    }(ran[i])));
                }
                for (auto& h : inner) co_await h;
            }(ran, gi * per, gi == groups - 1 ? ran.size() : (gi + 1) * per)));
        }
        for (auto& h : hs) co_await h;
    }(ran));
    ++o.runs;
    for (std::size_t i = 0; i < tagged; ++i) {
        ++o.events;
        if (ran[i].load(std::memory_order_relaxed) != 1) {
            forbid(o, "runtime task " + std::to_string(i) + " ran " +
                          std::to_string(ran[i].load(std::memory_order_relaxed)) + " times");
        }
    }
    const std::uint64_t leaves = p.quick ? 100'000 : 1'000'000;
    const std::uint64_t sum = rt.block_on(workloads::skynet(0, leaves));
    ++o.runs;
    o.events += leaves;
    if (sum != leaves * (leaves - 1) / 2) {
        forbid(o, "skynet sum " + std::to_string(sum) +
                      " != " + std::to_string(leaves * (leaves - 1) / 2));
    }
    return o;
}

// Q7: each victim walk starts at a uniform random other worker and tries every other worker
// once, never itself. Read from steal_walk probes: structure per walk, uniformity of the start
// offset by chi-square (p = 1e-6) over all walks. Control: every walk starts at the same place.
outcome check_q7(const run_params& p, bool faulty) {
    outcome o;
    if (p.workers < 3) {  // with two workers there is only one victim to choose
        o.applicable = false;
        return o;
    }
    config c = probed(p.workers);
    c.debug.fixed_victim_start = faulty;
    runtime rt(c);
    const unsigned w = p.workers;
    std::vector<std::uint64_t> offsets(w - 1, 0);
    std::uint64_t walks = 0;
    const int rounds = p.quick ? 8 : 40;
    for (int r = 0; r < rounds; ++r) {
        rt.block_on(workloads::tree(4, 5));
        rt.block_on(workloads::fan_out(2000));
        ++o.runs;
        visit_events(rt, o, [&](const probe_event& e) {
            if (e.kind != probe_kind::steal_walk) return;
            ++o.events;
            ++walks;
            const unsigned self = e.worker;
            // The mask holds the victims below 64 only: above 64 workers, a walk's victims
            // beyond it are counted in c but not named.
            const std::uint64_t low = w >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << w) - 1;
            const std::uint64_t self_bit = self < 64 ? std::uint64_t{1} << self : 0;
            const std::uint64_t others = low & ~self_bit;
            const auto named = static_cast<std::uint64_t>(std::popcount(e.b));
            if (e.b & self_bit) forbid(o, "a worker tried to steal from itself");
            if (w <= 64 ? named != e.c : named > e.c) forbid(o, "a walk tried a victim twice");
            if (e.c > w - 1) forbid(o, "a walk tried more victims than there are");
            if (e.c == w - 1 && e.b != others) forbid(o, "a full walk missed a worker");
            if (e.a == self || e.a >= w) {
                forbid(o, "a walk started at itself or outside the runtime");
                return;
            }
            ++offsets[(e.a + w - self - 1) % w];
        });
    }
    const double expected = static_cast<double>(walks) / (w - 1);
    if (expected < 20) {
        note_first(o, "too few walks for the uniformity test: " + std::to_string(walks));
        if (faulty) forbid(o, "too few walks to judge the control");
        return o;
    }
    double chi = 0;
    for (std::uint64_t n : offsets) chi += (n - expected) * (n - expected) / expected;
    if (chi > chi_square_limit(w - 2)) {
        forbid(o, "victim start not uniform: chi-square " + std::to_string(chi) + " over " +
                      std::to_string(walks) + " walks (limit " +
                      std::to_string(chi_square_limit(w - 2)) + ")");
    }
    return o;
}

// Q5: a steal takes exactly ceil(available / 2), never more than 128 (a thief searches with an
// empty ring, so its room never binds). Every steal in the stream is counted against that, so a
// steal of floor(n/2) is caught too (issue 15: it used to pass, the check being only "at most").
// Workload: a task fills its own ring with children and holds its worker, so only thieves can
// run them. Control: steal everything.
outcome check_q5(const run_params& p, bool faulty) {
    outcome o;
    if (p.workers < 2) {
        o.applicable = false;
        return o;
    }
    config c = probed(p.workers);
    c.debug.steal_all = faulty;
    runtime rt(c);
    const int rounds = p.quick ? 3 : 20;
    for (int r = 0; r < rounds; ++r) {
        const int children = 40 + static_cast<int>(detail::mix_seed(p.seed + r) % 180);
        rt.block_on([](int n) -> task<void> {
            std::atomic<int> done{0};
            std::vector<join_handle<void>> hs;
            for (int i = 0; i < n; ++i) {
                hs.push_back(spawn([](std::atomic<int>& d) -> task<void> {
                    d.fetch_add(1);
                    co_return;
                }(done)));
            }
            // The last child waits in this worker's LIFO slot, which thieves cannot take.
            const auto cap = std::chrono::steady_clock::now() + 30s;
            while (done.load() < n - 1 && std::chrono::steady_clock::now() < cap) {
            }
            for (auto& h : hs) co_await h;
        }(children));
        ++o.runs;
    }
    visit_events(rt, o, [&](const probe_event& e) {
        if (e.kind != probe_kind::steal) return;
        ++o.events;
        const std::uint64_t half = std::min<std::uint64_t>(e.b - e.b / 2, 128);
        if (e.c != half) {
            ++o.violations;
            note_first(o, "took " + std::to_string(e.c) + " of " + std::to_string(e.b));
        }
    });
    return o;
}

// Q4: a full ring with no steal in progress moves half of itself (128) plus the new task to the
// global queue; with a steal in progress only the new task goes. Workload: one task spawns
// thousands of children without yielding. Control: move the whole ring. Each run ends with a
// round on one worker, where no steal is ever in progress: with thieves busy on two CPUs, every
// overflow of the W-worker rounds can meet a steal and move one task, and then the control went
// uncaught (it did once in CI, at 4 workers, with the machine shared with other tests).
outcome check_q4(const run_params& p, bool faulty) {
    outcome o;
    auto run = [&](unsigned workers, int rounds) {
        config c = probed(workers);
        c.debug.overflow_all = faulty;
        runtime rt(c);
        for (int r = 0; r < rounds; ++r) {
            rt.block_on(workloads::fan_out(3'000));
            ++o.runs;
        }
        visit_events(rt, o, [&](const probe_event& e) {
            if (e.kind != probe_kind::overflow) return;
            ++o.events;
            if (e.b != 129 && e.b != 1) {
                ++o.violations;
                note_first(o, "an overflow moved " + std::to_string(e.b) + " tasks");
            }
        });
    };
    run(p.workers, p.quick ? 2 : 10);
    if (p.workers > 1) run(1, 1);
    return o;
}

}  // namespace

std::vector<checker> queue_checkers() {
    return {
        {"Q5", "a steal takes ceil(n/2) tasks, at most 128", "steal everything", check_q5},
        {"Q4", "a full ring moves 128 + 1 tasks (or 1 during a steal) to the global queue",
         "move the whole ring", check_q4},
        {"Q1", "ring span (incl. slots being stolen) never exceeds 256",
         "full check ignores a steal in progress", check_q1},
        {"Q2", "packed 32+32 head and 32-bit tail work across the 2^32 wrap",
         "pop compares indices with <", check_q2},
        {"Q3", "the owner pops the oldest task (FIFO)", "owner pops its newest task", check_q3},
        {"Q6", "every task runs exactly once (ring with thieves; runtime; skynet)",
         "thief claims one task fewer than it copies", check_q6},
        {"Q7", "victim walks start uniformly, visit every other worker once, never self",
         "every walk starts at the same worker", check_q7},
    };
}

}  // namespace blitz::conformance
