// SPDX-License-Identifier: MIT
// Model: the idle protocol (I1-I6) with the real idle_state, parker and global queue, and the
// worker's park path and the producer's notify written out as worker.cpp and scheduler.cpp do
// them. A task pushed by a producer while every worker is on its way to sleep is always taken:
// either the producer sees no searcher and claims a parked worker, or the last searcher's final
// check finds the task (the Dekker pattern on num_searching). Park timeouts are off, so a lost
// wake-up is a deadlock. With two tasks and two workers each kept busy by the task it takes, the
// last searcher to find work must wake the other worker (I4's first half). And searcher limiting
// (I1): workers racing into the searcher gate go past the cap only through the race the gate
// allows, and every such excess is counted.

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
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
    // Model worker i is runtime worker i * stride: a stride of 64 puts each in its own bitmap
    // word, under the summary word (a runtime of workers * 64).
    unsigned stride = 1;
    world(unsigned workers, unsigned stride) : idle(workers * stride, true), stride(stride) {}
    unsigned index(unsigned i) const { return i * stride; }
};

// A producer's wake (scheduler::notify_parked): a parked worker unless someone searches.
// `pushed_by_rmw`: after a global queue push, whose seq_cst RMW on the length lets the searcher
// count be read with a seq_cst load (scheduler::schedule). This model's seq_cst operations share
// one clock (stronger than C++, see model.hpp), so it cannot tell that load from the RMW used
// after a ring push: the argument for the load is the seq_cst total order (idle_state.cpp).
void notify_parked(world& w, bool pushed_by_rmw = false) {
    if (!w.idle.should_notify(nullptr, pushed_by_rmw)) return;
    if (auto c = w.idle.claim_parked()) w.parkers[c->index / w.stride].unpark();
}

struct idle_faults_in_model {
    bool skip_final_check = false;   // the last searcher's check of every queue (I4)
    bool skip_missed_push = false;   // every other parker's look at the global queue
    bool skip_last_wake = false;     // the last searcher to find work wakes nobody (I4)
    bool stay_non_searcher = false;  // a park the final check cancelled does not search again
};

// A worker that found nothing, on its way to sleep (worker.cpp's park path), until it has run
// a task or the runtime shuts down. The task it takes keeps it busy from then on (the worker
// leaves the model), so any other task must be found by another worker. A searcher that takes
// a task and was the last one wakes a parked worker (I4's first half, worker::run_task).
void worker_park_path(world& w, unsigned i, idle_faults_in_model f) {
    for (;;) {
        if (task_header* t = w.global.pop()) {
            (void)t;
            ++w.taken;
            if (w.searching[i]) {
                w.searching[i] = false;
                // worker::run_task: the wake, when more work is visible.
                if (w.idle.transition_from_searching() && !f.skip_last_wake && !w.global.empty())
                    notify_parked(w);
            }
            return;
        }
        if (w.done) {
            if (w.searching[i]) {
                w.searching[i] = false;
                (void)w.idle.transition_from_searching();
            }
            return;
        }
        const bool was_searching = w.searching[i];
        const bool last = w.idle.mark_parked(w.index(i), was_searching);
        w.searching[i] = false;
        // The last searcher's final check of every queue, and everyone else's look at the
        // global queue (worker::park's missed_push); the controls leave out one or the other.
        const bool final_check = last ? !f.skip_final_check : !f.skip_missed_push;
        if (final_check && !w.global.empty()) {
            // I4: the final check found the task; do not sleep.
            if (!w.idle.unmark_parked(w.index(i))) {
                (void)w.parkers[i].try_consume();  // claimed meanwhile: we are its searcher
                w.searching[i] = true;
            } else if (!f.stay_non_searcher) {
                w.searching[i] = w.idle.try_become_searcher().admitted;  // worker::begin_search
            }
            continue;
        }
        const bool token = w.parkers[i].park(forever);
        if (!w.idle.unmark_parked(w.index(i))) {
            // I6: claimed by a producer, so a searcher now.
            if (!token) (void)w.parkers[i].try_consume();
            w.searching[i] = true;
        }
    }
}

// `tasks` tasks pushed by a producer outside the runtime (push, then notify: scheduler::schedule)
// while the workers are on their way to sleep; every task must be taken.
std::function<void()> idle_body(unsigned workers, unsigned tasks, idle_faults_in_model f = {},
                                unsigned stride = 1) {
    return [=] {
        world w(workers, stride);
        std::array<task_header, 2> task_headers;
        // Worker 0 is the runtime's one searcher; the others were already on their way to park.
        BLITZ_MODEL_CHECK(w.idle.try_become_searcher().admitted);
        w.searching[0] = true;
        std::vector<std::unique_ptr<thread>> ts;
        for (unsigned i = 0; i < workers; ++i)
            ts.push_back(std::make_unique<thread>([&w, i, f] { worker_park_path(w, i, f); }));
        for (unsigned k = 0; k < tasks; ++k) {
            w.global.push(&task_headers[k]);
            notify_parked(w, /*pushed_by_rmw=*/true);
        }
        // Shutdown once every task has run: its unparks end the remaining sleeps. A lost
        // wake-up never gets here (the model reports the spin as a livelock).
        while (w.taken < static_cast<int>(tasks)) yield();
        w.done = true;
        for (unsigned i = 0; i < workers; ++i) w.parkers[i].unpark();
        for (auto& t : ts) t->join();
        BLITZ_MODEL_CHECK(w.taken == static_cast<int>(tasks));
        BLITZ_MODEL_CHECK(w.idle.num_searching() == 0);
    };
}

TEST(ModelIdle, APushRacingTheLastSearchersParkIsNeverLost) {
    expect_holds("idle: one worker parking against a producer", untimed(), idle_body(1, 1));
}

TEST(ModelIdle, TwoWorkersParkingAgainstAProducer) {
    expect_holds("idle: two workers parking against a producer", untimed(), idle_body(2, 1));
}

TEST(ModelIdle, TheLastSearcherToFindWorkWakesAnother) {
    expect_holds("idle: two workers, two tasks, each worker kept busy by one", untimed(),
                 idle_body(2, 2));
}

TEST(ModelIdle, TwoWorkersInTwoBitmapWordsParkingAgainstAProducer) {
    expect_holds("idle: workers 0 and 64 of 128 parking against a producer", untimed(),
                 idle_body(2, 1, {}, 64));
}

TEST(ModelIdle, TheLastSearcherToFindWorkWakesAnotherInAnotherWord) {
    expect_holds("idle: workers 0 and 64 of 128, two tasks, each worker kept busy by one",
                 untimed(), idle_body(2, 2, {}, 64));
}

TEST(ModelIdle, ControlSkippedFinalCheckIsCaught) {
    expect_caught("idle control: the last searcher skips its final check (I4)", untimed(),
                  idle_body(1, 1, {.skip_final_check = true}));
}

TEST(ModelIdle, ControlParkerNotLookingAtTheGlobalQueueIsCaught) {
    expect_caught("idle control: a parking non-searcher skips its look at the global queue",
                  untimed(), idle_body(2, 2, {.skip_missed_push = true}));
}

TEST(ModelIdle, ControlCancelledParkNotSearchingAgainIsCaught) {
    expect_caught("idle control: a park the final check cancelled comes back as a non-searcher",
                  untimed(), idle_body(2, 2, {.stay_non_searcher = true}));
}

TEST(ModelIdle, ControlSkippedLastSearcherWakeIsCaught) {
    expect_caught("idle control: the last searcher to find work wakes nobody (I4)", untimed(),
                  idle_body(2, 2, {.skip_last_wake = true}));
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

// The multi-word bitmap (I7, above 64 workers): worker 64 woke by timeout, so word 1 is empty
// but its summary bit is still set. A claimer that finds the word empty clears the bit while
// worker 65 parks in the same word. What must hold in every interleaving: the park is never
// hidden from claimers (the claimer took it, or a later claim finds it), and at the end the
// counts and the bitmap agree.
std::function<void()> summary_body() {
    return [] {
        idle_state idle(128, true);
        idle.mark_parked(64, false);
        BLITZ_MODEL_CHECK(idle.unmark_parked(64));  // the stale summary bit
        std::optional<idle_state::claim> during;
        thread parker([&idle] { (void)idle.mark_parked(65, false); });
        thread claimer([&idle, &during] { during = idle.claim_parked(); });
        parker.join();
        claimer.join();
        const auto after = idle.claim_parked();
        BLITZ_MODEL_CHECK(during.has_value() != after.has_value());  // exactly one claim of 65
        BLITZ_MODEL_CHECK((during ? during : after)->index == 65);
        BLITZ_MODEL_CHECK(idle.num_parked() == 0 && idle.bitmap_word(1) == 0);
    };
}

TEST(ModelIdle, AParkRacingASummaryClearIsNeverHidden) {
    expect_holds("idle: a park racing a claimer clearing its word's summary bit (W=128)", options{},
                 summary_body());
}

TEST(ModelIdle, ControlSummaryClearWithoutSecondLookIsCaught) {
    options o;
    o.weaken = "summary_skips_second_look";
    expect_caught("idle control: a claimer clears a summary bit without looking at the word again",
                  o, summary_body());
}

TEST(ModelIdle, ControlSummaryBitSetBeforeTheWordsIsCaught) {
    options o;
    o.weaken = "summary_before_word";
    expect_caught("idle control: a parker sets its word's summary bit before the word's bit", o,
                  summary_body());
}

}  // namespace
}  // namespace blitz::model
