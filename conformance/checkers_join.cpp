// SPDX-License-Identifier: MIT
// Task-set checkers (issue 47): join_set and join_map deliver each task's outcome exactly once
// through join_next, also when join_next loses a select or a timeout, and when tasks and the
// waiter are aborted (X8).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/rng.hpp"
#include "blitz/join_set.hpp"
#include "blitz/testing.hpp"
#include "blitz_testing/workloads.hpp"
#include "checker_util.hpp"
#include "registry.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;

void x8_lost_select(outcome& o, bool quick, bool faulty) {
    config c = fresh(1);
    c.debug.join_set_hands_to_waiter = faulty;
    runtime rt(c);
    const int rounds = quick ? 30 : 300;
    for (int r = 0; r < rounds; ++r) {
        ++o.runs;
        ++o.events;
        const int got = workloads::join_outcomes_after_lost_select(rt);
        if (got != 1) {
            forbid(o, "a join_next that lost a select took an outcome: " + std::to_string(got) +
                          " of 1 came out afterwards");
        }
    }
}

// What one random round saw, per task index: how often it came out, and how.
struct set_ledger {
    std::vector<int> seen;
    std::uint64_t values = 0, errors = 0, cancelled = 0, wrong = 0;
    explicit set_ledger(std::size_t n) : seen(n, 0) {}
};

// A set task: yields or sleeps a little, then returns its index, or throws for every 13th.
task<int> set_member(int index, std::uint32_t seed) {
    detail::fast_rng rng(seed);
    const unsigned steps = rng.bounded(4);
    for (unsigned k = 0; k < steps; ++k) {
        if (rng.bounded(3) == 0) {
            co_await sleep(std::chrono::microseconds(rng.bounded(200)));
        } else {
            co_await yield_now();
        }
    }
    if (index % 13 == 0) throw std::runtime_error("set member failed");
    co_return index;
}

template <class Outcome>
void record(set_ledger& L, int index, Outcome& r) {
    if (index < 0) {
        ++L.wrong;  // an id the owner never spawned
        return;
    }
    ++L.seen[static_cast<std::size_t>(index)];
    if (r.is_cancelled()) {
        ++L.cancelled;
    } else if (r.has_exception()) {
        ++L.errors;
        if (index % 13 != 0) ++L.wrong;
    } else {
        ++L.values;
        if (r.value() != index) ++L.wrong;
    }
}

// One owner with a join_set (or a join_map keyed by index) on every worker: spawns `n` tasks in
// bursts, and joins through a select against a short sleep, a timeout, or plainly; aborts all
// at random, or one key; a helper joins part of the way and is aborted meanwhile. Every index
// must come out exactly once.
task<void> random_owner(set_ledger& L, int n, std::uint32_t seed, bool keyed) {
    detail::fast_rng rng(seed);
    join_set<int> set;
    join_map<int, int> map;
    std::unordered_map<std::uint64_t, int> ids;  // join_set: a task's index by its id
    auto index_of = [&](std::uint64_t id) {
        auto it = ids.find(id);
        return it == ids.end() ? -1 : it->second;
    };
    auto take = [&](auto& r) {
        if constexpr (requires { r.first; }) {
            record(L, r.first, r.second);
        } else {
            record(L, index_of(r.id()), r);
        }
    };
    auto join_some = [&](auto& s, int k) -> task<bool> {
        for (int j = 0; j < k; ++j) {
            switch (rng.bounded(3)) {
                case 0: {
                    auto r = co_await select(s.join_next(),
                                             sleep(std::chrono::microseconds(rng.bounded(100))));
                    if (r.index() == 0) {
                        if (!std::get<0>(r)) co_return false;
                        take(*std::get<0>(r));
                    }
                    break;
                }
                case 1: {
                    auto t = co_await timeout(std::chrono::microseconds(rng.bounded(100)),
                                              s.join_next());
                    if (!t.timed_out()) {
                        if (!t.value()) co_return false;
                        take(*t.value());
                    }
                    break;
                }
                default: {
                    auto r = co_await s.join_next();
                    if (!r) co_return false;
                    take(*r);
                }
            }
        }
        co_return true;
    };
    for (int i = 0; i < n;) {
        const int burst = 1 + static_cast<int>(rng.bounded(16));
        for (int b = 0; b < burst && i < n; ++b, ++i) {
            if (keyed) {
                map.spawn(i, set_member(i, rng.next()));
            } else {
                ids.emplace(set.spawn(set_member(i, rng.next())), i);
            }
        }
        const unsigned what = rng.bounded(48);
        if (what == 0) {
            keyed ? map.abort_all() : set.abort_all();
        } else if (what == 1 && keyed) {
            (void)map.abort(static_cast<int>(rng.bounded(static_cast<std::uint32_t>(i))));
        }
        if (keyed) {
            (void)co_await join_some(map, static_cast<int>(rng.bounded(8)));
        } else {
            (void)co_await join_some(set, static_cast<int>(rng.bounded(8)));
        }
    }
    if (keyed) {
        while (co_await join_some(map, 1)) {
        }
    } else {
        while (co_await join_some(set, 1)) {
        }
    }
}

void x8_random(outcome& o, const run_params& p, bool faulty) {
    config c = fresh(p.workers);
    c.debug.join_set_hands_to_waiter = faulty;
    runtime rt(c);
    detail::fast_rng rng(p.seed * 41 + p.workers);
    const int n = p.quick ? 2000 : 20000;
    for (bool keyed : {false, true}) {
        for (int round = 0; round < 3; ++round) {
            ++o.runs;
            set_ledger L(static_cast<std::size_t>(n));
            rt.block_on(random_owner(L, n, rng.next(), keyed));
            std::uint64_t missing = 0, twice = 0;
            for (int s : L.seen) {
                missing += s == 0 ? 1 : 0;
                twice += s > 1 ? 1 : 0;
            }
            o.events += static_cast<std::uint64_t>(n);
            const std::string what = keyed ? "join_map" : "join_set";
            if (missing)
                forbid(o, what + ": " + std::to_string(missing) + " outcomes never came out");
            if (twice) forbid(o, what + ": " + std::to_string(twice) + " outcomes came out twice");
            if (L.wrong)
                forbid(o,
                       what + ": " + std::to_string(L.wrong) + " outcomes were not their task's");
            o.interesting += L.cancelled;
        }
    }
}

// X8: the deterministic shape catches the control on its own; the random run counts too.
outcome check_x8(const run_params& p, bool faulty) {
    outcome o;
    x8_lost_select(o, p.quick, faulty);
    const std::uint64_t deterministic = o.violations;
    x8_random(o, p, faulty);
    if (faulty && deterministic == 0) {
        o.violations = 0;  // the deterministic half must catch the control by itself
        o.detail = "an outcome handed to a join_next that lost its select not caught";
    }
    return o;
}

}  // namespace

std::vector<checker> join_checkers() {
    return {
        {"X8",
         "join_set/join_map: each task's outcome comes out of join_next exactly once, also when "
         "join_next loses a select or a timeout and when tasks are aborted",
         "a finished task's outcome is handed straight to the waiting join_next, which drops it "
         "when it never resumes",
         check_x8},
    };
}

}  // namespace blitz::conformance
