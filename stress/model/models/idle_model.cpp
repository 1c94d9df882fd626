// SPDX-License-Identifier: MIT
// Model: the idle protocol (I1-I6) with the real idle_state, parker and global queue, and the
// worker's park path and the producer's notify written out as worker.cpp and scheduler.cpp do
// them. A task pushed by a producer while every worker is on its way to sleep is always taken:
// either the producer sees no searcher and claims a parked worker, or the last searcher's final
// check finds the task (the Dekker pattern on num_searching). Park timeouts are off, so a lost
// wake-up is a deadlock. And searcher limiting (I1): workers racing into the searcher gate go
// past the cap only through the race the gate allows, and every such excess is counted.

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "model.hpp"
#include "model_report.hpp"
#include "sched/global_queue.hpp"
#include "sched/idle_state.hpp"
#include "sched/parker.hpp"

namespace blitz::model {
namespace {

using detail::global_queue;
using detail::idle_state;
using detail::parker;
using detail::task_header;

constexpr auto forever = std::chrono::nanoseconds(std::chrono::hours(1));

struct world {
    idle_state idle;
    global_queue global;
    std::array<parker, 2> parkers;
    std::array<bool, 2> searching{};
    int taken = 0;      // tasks the workers took (fibers run one at a time: plain is fine)
    bool done = false;  // the runtime is shutting down
    explicit world(unsigned workers) : idle(workers, true) {}
};

// A worker that found nothing, on its way to sleep (worker.cpp's park path), until it has run
// the one task or the runtime shuts down.
void worker_park_path(world& w, unsigned i, bool skip_final_check) {
    auto stop_searching = [&] {
        if (w.searching[i]) {
            w.searching[i] = false;
            (void)w.idle.transition_from_searching();
        }
    };
    for (;;) {
        if (task_header* t = w.global.pop()) {
            (void)t;
            ++w.taken;
            stop_searching();  // with one task there is nobody for the last searcher to wake
            return;
        }
        if (w.done) {
            stop_searching();
            return;
        }
        const bool was_searching = w.searching[i];
        const bool last = w.idle.mark_parked(i, was_searching);
        w.searching[i] = false;
        const bool final_check = last && !skip_final_check;
        if (final_check && !w.global.empty()) {
            // I4: the last searcher's final check found the task; do not sleep.
            if (!w.idle.unmark_parked(i)) {
                (void)w.parkers[i].try_consume();  // claimed meanwhile: we are its searcher
                w.searching[i] = true;
            }
            continue;
        }
        const bool token = w.parkers[i].park(forever);
        if (!w.idle.unmark_parked(i)) {
            // I6: claimed by a producer, so a searcher now.
            if (!token) (void)w.parkers[i].try_consume();
            w.searching[i] = true;
        }
    }
}

// A producer outside the runtime: push, then wake a parked worker unless someone searches
// (scheduler::schedule and notify_parked).
void producer(world& w, task_header* t) {
    w.global.push(t);
    if (!w.idle.should_notify()) return;
    if (auto c = w.idle.claim_parked()) w.parkers[c->index].unpark();
}

std::function<void()> idle_body(unsigned workers, bool skip_final_check) {
    return [=] {
        world w(workers);
        task_header task;
        // Worker 0 is the runtime's one searcher; the others were already on their way to park.
        BLITZ_MODEL_CHECK(w.idle.try_become_searcher().admitted);
        w.searching[0] = true;
        std::vector<std::unique_ptr<thread>> ts;
        for (unsigned i = 0; i < workers; ++i)
            ts.push_back(std::make_unique<thread>(
                [&w, i, skip_final_check] { worker_park_path(w, i, skip_final_check); }));
        producer(w, &task);
        // Shutdown once the task has run: its unparks end the remaining sleeps. A lost wake-up
        // never gets here (the model reports the spin as a livelock).
        while (w.taken == 0) yield();
        w.done = true;
        for (unsigned i = 0; i < workers; ++i) w.parkers[i].unpark();
        for (auto& t : ts) t->join();
        BLITZ_MODEL_CHECK(w.taken == 1);
        BLITZ_MODEL_CHECK(w.idle.num_searching() == 0);
    };
}

options untimed() {
    options o;
    o.timeouts = false;
    return o;
}

TEST(ModelIdle, APushRacingTheLastSearchersParkIsNeverLost) {
    expect_holds("idle: one worker parking against a producer", untimed(), idle_body(1, false));
}

TEST(ModelIdle, TwoWorkersParkingAgainstAProducer) {
    expect_holds("idle: two workers parking against a producer", untimed(), idle_body(2, false));
}

TEST(ModelIdle, ControlSkippedFinalCheckIsCaught) {
    expect_caught("idle control: the last searcher skips its final check (I4)", untimed(),
                  idle_body(1, true));
}

// I1 with W = 4 (the cap: 2 * searchers < 4, so two at rest) and three workers that each try
// to become a searcher and then stop searching, racing each other. What must hold in every
// interleaving: an admission past the cap happens only when the count changed between the
// gate's look and the increment (the racy excess the seeds allow); every admission past the cap
// is counted in overshoots(); the count is back to 0 at the end, and the worker whose leaving
// took it to 0 was told it was the last searcher.
std::function<void()> searcher_gate_body() {
    return [] {
        constexpr unsigned workers = 4;
        idle_state idle(workers, true);
        std::array<idle_state::admission, 3> seen{};
        std::array<bool, 3> last{};
        std::vector<std::unique_ptr<thread>> ts;
        for (unsigned i = 0; i < seen.size(); ++i)
            ts.push_back(std::make_unique<thread>([&idle, &seen, &last, i] {
                seen[i] = idle.try_become_searcher();
                if (seen[i].admitted) last[i] = idle.transition_from_searching();
            }));
        for (auto& t : ts) t->join();
        unsigned past_cap = 0, admitted = 0, lasts = 0;
        for (unsigned i = 0; i < seen.size(); ++i) {
            if (!seen[i].admitted) continue;
            ++admitted;
            if (last[i]) ++lasts;
            if (2 * seen[i].prev >= workers) {
                ++past_cap;
                BLITZ_MODEL_CHECK(seen[i].gate_seen != seen[i].prev);  // only through the race
            }
        }
        BLITZ_MODEL_CHECK(idle.overshoots() == past_cap);
        BLITZ_MODEL_CHECK(idle.num_searching() == 0);
        BLITZ_MODEL_CHECK(admitted >= 1);  // the first to arrive always finds the gate open
        BLITZ_MODEL_CHECK(lasts >= 1);     // whoever took the count to 0 was told so
    };
}

TEST(ModelIdle, SearchersPassTheCapOnlyThroughTheRaceAndAreCounted) {
    expect_holds("idle: three workers racing into the searcher gate (W=4)", options{},
                 searcher_gate_body());
}

TEST(ModelIdle, ControlSearcherGateOffByOneIsCaught) {
    options o;
    o.weaken = "searcher_gate_off_by_one";
    expect_caught("idle control: the searcher gate admits one too many (I1)", o,
                  searcher_gate_body());
}

}  // namespace
}  // namespace blitz::model
