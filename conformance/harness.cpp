// SPDX-License-Identifier: MIT
// The harness's running half: every selected checker over every config, then its negative
// control, under a watchdog. Printing and writing are in harness_report.cpp.
#include "harness.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "blitz/topology.hpp"
#include "blitz_testing/suite.hpp"
#include "topo/machine.hpp"

namespace blitz::conformance {
namespace {

// Ends the process when one checker run exceeds its limit: a hang (a lost wakeup with nothing
// left to rescue it, a deadlock) is a forbidden outcome, reported rather than waited out.
class watchdog {
public:
    explicit watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { loop(); }) {}
    ~watchdog() {
        {
            std::lock_guard<std::mutex> l(mu_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void arm(std::string what) {
        std::lock_guard<std::mutex> l(mu_);
        what_ = std::move(what);
        deadline_ = std::chrono::steady_clock::now() + limit_;
    }

private:
    void loop() {
        std::unique_lock<std::mutex> l(mu_);
        while (!done_) {
            cv_.wait_for(l, std::chrono::seconds(1));
            if (!done_ && !what_.empty() && std::chrono::steady_clock::now() > deadline_) {
                std::cerr << "\n[conformance] FORBIDDEN: " << what_ << " did not finish within "
                          << limit_.count() << " s (a hang: lost wakeup or deadlock)\n";
                std::_Exit(3);
            }
        }
    }
    std::chrono::seconds limit_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::string what_;
    std::chrono::steady_clock::time_point deadline_{};
    std::thread thread_;
};

// The shipped shapes (conformance/topologies/*.synth and *.xml), sorted by name.
std::vector<std::string> shipped_topologies() {
    std::vector<std::string> r;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(BLITZ_TOPOLOGY_DIR, ec)) {
        const std::string ext = e.path().extension().string();
        if (ext == ".synth" || ext == ".xml") r.push_back(e.path().string());
    }
    if (r.empty()) {
        // Installed without the source tree: the two shapes the N checkers must cover.
        r = {"pack:2 numa:2 core:8 pu:2", "pack:1 numa:4 core:16 pu:1"};
    }
    std::sort(r.begin(), r.end());
    return r;
}

}  // namespace

suite_run run_checkers(const harness_options& o) {
    const auto started = std::chrono::steady_clock::now();
    for (const std::string& id : o.filter) {
        const auto& all = all_checkers();
        if (std::none_of(all.begin(), all.end(), [&](const checker& c) { return c.id == id; })) {
            std::string known;
            for (const checker& c : all) known += " " + c.id;
            throw std::invalid_argument("--filter: no checker for '" + id + "'; known:" + known);
        }
    }
    const std::vector<std::string> shapes =
        o.topologies.empty() ? shipped_topologies() : o.topologies;
    std::vector<std::string> topologies{""};  // this machine first
    for (const auto& t : shapes) {
        detail::topo::load_machine(t);  // a bad --topology fails here, before any checker runs
        topologies.push_back(t);
    }
    const unsigned max_pinned = static_cast<unsigned>(detail::topo::load_machine("").pus.size());
    watchdog dog(std::chrono::seconds(o.quick ? 600 : 3600));
    suite_run out;
    out.max_pinned = max_pinned;
    std::vector<checker_row>& rows = out.rows;
    for (const checker& c : all_checkers()) {
        if (!o.filter.empty() &&
            std::find(o.filter.begin(), o.filter.end(), c.id) == o.filter.end()) {
            continue;
        }
        checker_row r;
        r.c = &c;
        const auto row_started = std::chrono::steady_clock::now();
        auto one = [&](const run_params& p, const std::string& label) {
            std::cerr << "\r[conformance] " << c.id << " " << label << "            " << std::flush;
            dog.arm(c.id + " " + label);
            outcome x = c.run(p, /*faulty=*/false);
            if (!x.applicable) return;
            r.applicable = true;
            r.total.runs += x.runs;
            r.total.events += x.events;
            r.total.violations += x.violations;
            r.total.interesting += x.interesting;
            if (r.total.detail.empty()) r.total.detail = x.detail;
            if (!x.note.empty()) {
                r.total.note += (r.total.note.empty() ? "" : "; ") + label + ": " + x.note;
            }
        };
        if (c.per_topology) {
            current_placement() = suite_placement{placement_policy::none, 0, o.seed};
            for (const std::string& t : topologies) {
                for (unsigned w : o.workers) {
                    one(run_params{w, o.seed, o.quick, t},
                        topology_label(t) + " W=" + std::to_string(w));
                }
            }
        } else {
            for (placement_policy pol : o.policies) {
                current_placement() = suite_placement{pol, max_pinned, o.seed};
                for (unsigned w : o.workers) {
                    if (pol != placement_policy::none && w > max_pinned) continue;
                    one(run_params{w, o.seed, o.quick, {}},
                        (pol == placement_policy::none ? std::string()
                                                       : to_string(pol) + std::string(" ")) +
                            "W=" + std::to_string(w));
                }
            }
            current_placement() = suite_placement{placement_policy::none, 0, o.seed};
        }
        if (!r.applicable) {
            // E.g. Q7 with at most two workers: nothing to check, and nothing to catch. Shown as
            // n/a; it neither passes nor fails the run.
            r.seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - row_started)
                    .count();
            rows.push_back(std::move(r));
            continue;
        }
        std::cerr << "\r[conformance] " << c.id << " negative control      " << std::flush;
        // Controls run unpinned with at least 4 workers: some faults (e.g. I2's) need 3 to show.
        const unsigned cw = std::max(4u, o.workers.empty() ? 4u : o.workers.back());
        if (c.per_topology) {
            // Caught on every topology where the fault can show, and it must show somewhere.
            unsigned applicable = 0, caught = 0;
            for (const std::string& t : topologies) {
                dog.arm(c.id + " negative control on " + topology_label(t));
                outcome x = c.run(run_params{cw, o.seed, o.quick, t}, /*faulty=*/true);
                if (!x.applicable) continue;
                ++applicable;
                if (x.violations > 0) ++caught;
                r.control.violations += x.violations;
                if (x.violations == 0 && r.control.detail.empty()) {
                    r.control.detail = "not caught on " + topology_label(t);
                }
            }
            r.caught = applicable > 0 && caught == applicable;
            if (applicable == 0) r.control.detail = "the fault could not show on any topology";
        } else {
            dog.arm(c.id + " negative control");
            r.control = c.run(run_params{cw, o.seed, o.quick, {}}, /*faulty=*/true);
            r.caught = r.control.violations > 0;
        }
        r.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - row_started).count();
        r.pass = r.total.violations == 0 && r.total.events > 0 && r.caught;
        rows.push_back(std::move(r));
    }
    std::cerr << "\r" << std::string(60, ' ') << "\r";
    out.topologies = topologies;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
}

std::string topology_label(const std::string& t) {
    if (t.empty()) return "this machine";
    return std::filesystem::path(t).filename().string();
}

bool suite_run::all_pass() const {
    bool any = false;
    for (const checker_row& r : rows) {
        if (!r.applicable) continue;
        any = true;
        if (!r.pass) return false;
    }
    return any;
}

int run_harness(const harness_options& o) { return report_run(o, run_checkers(o)); }

}  // namespace blitz::conformance
