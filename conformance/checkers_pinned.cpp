// SPDX-License-Identifier: MIT
// Pinned-task checkers (issue 47): a task spawned with spawn_local or spawn_pinned is polled on
// its home worker only, whoever wakes it and however busy the other workers are (P1).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "blitz/local_set.hpp"
#include "blitz/testing.hpp"
#include "checker_util.hpp"
#include "registry.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;

// What the pinned tasks of one run saw: polls checked (one per resumption), and polls on a
// worker other than the task's home.
struct pinned_ledger {
    std::atomic<std::uint64_t> checked{0};
    std::atomic<std::uint64_t> away{0};
    std::atomic<int> first_away_home{-1}, first_away_worker{-1};
};

void note_poll(pinned_ledger& L, int home) {
    L.checked.fetch_add(1, std::memory_order_relaxed);
    const int here = this_worker_index();
    if (here == home) return;
    if (L.away.fetch_add(1, std::memory_order_relaxed) == 0) {
        L.first_away_home.store(home, std::memory_order_relaxed);
        L.first_away_worker.store(here, std::memory_order_relaxed);
    }
}

// A pinned task woken in turn by a yield, a sleep (a timer fired by whichever worker turns the
// wheel), a value sent by a task pinned to the next worker (a wake made on another worker's
// thread, which L1 would put in that worker's LIFO slot) and a value sent by a plain thread.
task<void> pinned_member(pinned_ledger& L, int home, receiver<int> from_worker,
                         receiver<int> from_thread, int rounds) {
    note_poll(L, home);
    for (int r = 0; r < rounds; ++r) {
        co_await yield_now();
        note_poll(L, home);
        co_await sleep(50us);
        note_poll(L, home);
        if (!co_await from_worker.recv()) break;
        note_poll(L, home);
        if (!co_await from_thread.recv()) break;
        note_poll(L, home);
    }
}

task<void> feed(sender<int> tx, int rounds) {
    for (int r = 0; r < rounds; ++r) {
        if (!co_await tx.send(r)) co_return;
    }
}

// Yielding load on every worker, so that thieves look for work all the time.
task<void> churn(int n) {
    for (int i = 0; i < n; ++i) co_await yield_now();
}

// Tasks of a local_set count their rounds together while yielding: a task of the set that ran
// on another worker is a poll away from home. (The counter is atomic only so that the control,
// under which the tasks do run on other workers, is not a data race under TSan; with P1 a
// plain int would do, as the unit tests and the example show.)
task<void> set_member(pinned_ledger& L, int home, std::atomic<int>& shared, int rounds) {
    for (int r = 0; r < rounds; ++r) {
        note_poll(L, home);
        shared.fetch_add(1, std::memory_order_relaxed);
        co_await yield_now();
    }
    note_poll(L, home);
}

task<int> local_set_round(pinned_ledger& L, int members, int rounds) {
    local_set<void> set;
    std::atomic<int> shared{0};
    const int home = static_cast<int>(set.home());
    for (int i = 0; i < members; ++i) set.spawn_local(set_member(L, home, shared, rounds));
    co_await set.join_all();
    co_return shared.load();
}

outcome check_p1(const run_params& p, bool faulty) {
    outcome o;
    if (p.workers < 2) {
        o.applicable = false;  // one worker: every task is on its home
        return o;
    }
    config c = fresh(p.workers);
    c.debug.pinned_tasks_migrate = faulty;
    runtime rt(c);
    const int W = static_cast<int>(rt.num_workers());
    const int rounds = p.quick ? 40 : 400;
    pinned_ledger L;
    for (int pass = 0; pass < 2; ++pass) {
        ++o.runs;
        std::vector<join_handle<void>> load, members, feeders;
        for (int i = 0; i < 4 * W; ++i) load.push_back(rt.spawn(churn(rounds * 8)));
        std::vector<sender<int>> plain;
        for (int h = 0; h < W; ++h) {
            auto [wtx, wrx] = channel<int>(1);
            auto [ttx, trx] = channel<int>(1);
            members.push_back(
                rt.spawn_pinned(static_cast<unsigned>(h), pinned_member(L, h, wrx, trx, rounds)));
            feeders.push_back(
                rt.spawn_pinned(static_cast<unsigned>((h + 1) % W), feed(wtx, rounds)));
            plain.push_back(std::move(ttx));
        }
        // The plain thread's values, one per member and round, as each channel has room.
        for (int r = 0; r < rounds; ++r) {
            for (auto& tx : plain) {
                for (;;) {
                    const auto sent = tx.try_send(r);
                    if (!sent.full()) break;  // sent, or the member is gone
                    std::this_thread::yield();
                }
            }
        }
        plain.clear();
        for (auto& h : feeders) h.join();
        for (auto& h : members) h.join();
        for (auto& h : load) h.join();
        // A local_set made by a task on some worker.
        const int members_n = 8;
        if (rt.block_on(local_set_round(L, members_n, rounds)) != members_n * rounds) {
            forbid(o, "a local_set's tasks did not all run their rounds");
        }
    }
    o.events = L.checked.load();
    if (const std::uint64_t away = L.away.load()) {
        forbid(o, std::to_string(away) + " of " + std::to_string(o.events) +
                      " polls of pinned tasks ran away from home (first: a task of worker " +
                      std::to_string(L.first_away_home.load()) + " polled on worker " +
                      std::to_string(L.first_away_worker.load()) + ")");
    }
    return o;
}

}  // namespace

std::vector<checker> pinned_checkers() {
    return {
        {"P1",
         "a pinned task (spawn_local, spawn_pinned, local_set) is polled on its home worker only, "
         "whoever wakes it: a yield, a timer, a task on another worker, a plain thread",
         "a pinned task's queue entries go where any task's would (LIFO slot, ring, global "
         "queue), where other workers take it",
         check_p1},
    };
}

}  // namespace blitz::conformance
