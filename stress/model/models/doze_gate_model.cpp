// SPDX-License-Identifier: MIT
// Model: the stall detector's doze (issue 46, sched/doze_gate.hpp). A worker leaving its park
// clears its parked bit and takes the doze flag; the watchdog, after a sample that saw every
// worker parked, publishes the flag and looks at the bits again. Whatever the interleaving,
// the watchdog never ends up dozing while the worker runs unless the worker's take saw the flag
// (and so wakes it). Control: a watchdog that dozes on its sample's look alone, without looking
// again after publishing the flag. (The store-buffering case that the seq_cst orders rule out
// is beyond this explorer, which models stale loads but not delayed stores.)

#include <gtest/gtest.h>

#include "model.hpp"
#include "model_report.hpp"
#include "sched/doze_gate.hpp"

namespace blitz::model {
namespace {

std::function<void()> doze_body() {
    return [] {
        detail::doze_gate gate;
        atomic<int> parked{1};  // the worker's parked bit: set, as the watchdog's sample saw
        bool dozed = false, woke = false;
        thread watchdog([&] { dozed = gate.try_doze([&] { return parked.load() == 1; }); });
        thread worker([&] {
            parked.fetch_sub(1);  // leaves its park (a seq_cst RMW, as idle_state does)
            woke = gate.wake();   // at the end of its park, before its next poll
        });
        watchdog.join();
        worker.join();
        // The worker is running: a dozing watchdog must have been woken by it.
        BLITZ_MODEL_CHECK(!dozed || woke);
    };
}

TEST(ModelDozeGate, TheFirstPollAfterADozeAlwaysWakesTheWatchdog) {
    expect_holds("doze gate: the watchdog dozes against a worker's unpark", options{}, doze_body());
}

// The control: the watchdog trusts the look its sample took and dozes without looking again
// after publishing the flag; a worker that left its park in between finds no flag.
TEST(ModelDozeGate, ControlDozingWithoutTheSecondLookIsCaught) {
    options o;
    o.weaken = "doze_no_recheck";
    expect_caught("doze gate control: no second look after publishing", o, doze_body());
}

}  // namespace
}  // namespace blitz::model
