// SPDX-License-Identifier: MIT
// The harness's running half: every selected checker over every config, then its negative
// control, under a watchdog. Printing and writing are in harness_report.cpp.
#include "harness.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "blitz/blitz.hpp"
#include "blitz/topology.hpp"
#include "blitz_testing/suite.hpp"
#include "blitz_testing/test_event.hpp"
#include "machine_record_io.hpp"
#include "sched/scheduler.hpp"
#include "task/alloc_stats.hpp"
#include "topo/machine.hpp"

namespace blitz::conformance {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Progress on stderr: on a terminal one line rewritten in place; in a log (not a TTY) the ids of
// the checkers as they start, all on one line, so a CI log shows how far the suite got (a crash
// or a hang names its checker) while the report that follows, whose first lines name any
// failure, stays near the top of the test's output: CI shows a failing test's first lines.
bool progress_tty() {
    static const bool tty = ::isatty(STDERR_FILENO) == 1;
    return tty;
}
std::string& progress_last_id() {
    static std::string last;
    return last;
}
void progress(const std::string& step) {
    if (progress_tty()) {
        std::cerr << "\r[conformance] " << step << "            " << std::flush;
        return;
    }
    const std::string id = step.substr(0, step.find(' '));
    std::string& last = progress_last_id();
    if (id == last) return;
    std::cerr << (last.empty() ? "[conformance] running:" : "") << " " << id << std::flush;
    last = id;
}
void progress_done() {
    if (progress_tty()) {
        std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;
    } else if (!progress_last_id().empty()) {
        std::cerr << "\n" << std::flush;
        progress_last_id().clear();
    }
}

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

// What each live runtime's workers were doing, from two snapshots a second apart.
std::string describe_workers() {
    const auto a = detail::snapshot_live_schedulers();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto b = detail::snapshot_live_schedulers();
    std::string out;
    for (std::size_t r = 0; r < b.size() && r < a.size(); ++r) {
        if (a[r].workers.size() != b[r].workers.size()) continue;  // not the same runtime
        out += (out.empty() ? "" : "; ") + std::string("runtime ") + std::to_string(r) + ":";
        for (std::size_t i = 0; i < b[r].workers.size(); ++i) {
            const auto& x = a[r].workers[i];
            const auto& y = b[r].workers[i];
            const char* doing = y.parked             ? "parked"
                                : y.polls != x.polls ? "running tasks"
                                : y.ticks != x.ticks ? "ticking without work"
                                                     : "inside one poll";
            out +=
                " w" + std::to_string(i) + " " + doing + " (" + std::to_string(y.polls) + " polls)";
        }
        out += ", global queue " + std::to_string(b[r].global_len) + ", searching " +
               std::to_string(b[r].searching);
    }
    return out.empty() ? "no runtime alive" : out;
}

// Runs one checker run on its own thread and watches it: a run that makes no progress (no task
// spawned or completed anywhere in the process, and under 0.2 s of CPU on its own thread) for
// `limit` is a hang. It is reported as a forbidden outcome naming the run, its seed and what
// each worker was doing, and abandoned (its thread detached, its runtime leaked) so the suite
// moves on; run_harness then ends the process without running destructors.
struct guarded {
    outcome o;
    bool hung = false;
};
// The current-thread pass's placement: fresh(1) makes a current-thread runtime (issue 47).
suite_placement current_thread_pass(std::uint64_t seed) {
    suite_placement p{placement_policy::none, 0, seed, io_mode_kind::shared, {}};
    p.flavor = runtime_flavor::current_thread;
    return p;
}

guarded run_guarded(const checker& c, run_params p, bool faulty, const std::string& label,
                    std::chrono::seconds limit) {
    struct shared {
        std::mutex mu;
        std::condition_variable cv;
        bool done = false;
        outcome o;
        std::exception_ptr e;
    };
    auto st = std::make_shared<shared>();
    std::thread t([st, &c, p, faulty] {
        outcome o;
        std::exception_ptr e;
        try {
            o = c.run(p, faulty);
        } catch (...) {
            e = std::current_exception();
        }
        {
            std::lock_guard<std::mutex> l(st->mu);
            st->o = std::move(o);
            st->e = e;
            st->done = true;
        }
        st->cv.notify_all();
    });
    clockid_t cpu_clock{};
    const bool have_cpu = pthread_getcpuclockid(t.native_handle(), &cpu_clock) == 0;
    auto tasks = [] {
        const auto a = detail::alloc_stats::read();
        return a.allocs + a.frees;
    };
    auto cpu_ns = [&]() -> std::int64_t {
        timespec ts{};
        if (!have_cpu || clock_gettime(cpu_clock, &ts) != 0) return 0;
        return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
    };
    std::uint64_t seen_tasks = tasks();
    std::int64_t seen_cpu = cpu_ns();
    auto last_progress = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> l(st->mu);
    while (!st->done) {
        st->cv.wait_for(l, std::chrono::seconds(1));
        if (st->done) break;
        const std::uint64_t now_tasks = tasks();
        const std::int64_t now_cpu = cpu_ns();
        if (now_tasks != seen_tasks || now_cpu - seen_cpu >= 200'000'000) {
            seen_tasks = now_tasks;
            seen_cpu = now_cpu;
            last_progress = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - last_progress >= limit) {
            l.unlock();
            guarded g;
            g.hung = true;
            g.o.runs = 1;
            g.o.events = 1;
            g.o.violations = 1;
            g.o.detail = "hang: " + c.id + " " + label + " (seed " + std::to_string(p.seed) +
                         ") made no progress for " + std::to_string(limit.count()) + " s; " +
                         describe_workers();
            std::cerr << "\n[conformance] FORBIDDEN: " << g.o.detail << "\n";
            t.detach();  // abandoned: st keeps what it writes alive
            return g;
        }
    }
    l.unlock();
    t.join();
    if (st->e) std::rethrow_exception(st->e);
    return {std::move(st->o), false};
}

// H0, for --hang-selftest only: block_on a task that waits for an event nobody sets. Its workers
// park and nothing moves, which the harness must report as a hang and move past.
const std::vector<checker>& hang_selftest_checkers() {
    static const std::vector<checker> v{
        {"H0", "(self-test) a run that never finishes is reported as a hang", "the same run",
         [](const run_params& p, bool) {
             runtime* rt = new runtime(fresh(p.workers));  // leaked with its abandoned thread
             auto* never = new detail::testing::test_event;
             rt->block_on(
                 [](detail::testing::test_event& e) -> task<void> { co_await e.wait(); }(*never));
             return outcome{};
         }}};
    return v;
}

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
    // A bad --place-on fails here too.
    const unsigned max_pinned =
        static_cast<unsigned>(detail::topo::load_machine(o.place_on).pus.size());
    const std::string placed_on =
        o.place_on.empty() ? std::string() : "on " + topology_label(o.place_on) + " ";
    watchdog dog(std::chrono::seconds(o.quick ? 600 : 3600));
    const std::chrono::seconds hang_limit(o.hang_limit_s ? o.hang_limit_s : o.quick ? 30 : 120);
    suite_run out;
    out.machine = report::read_machine_record(BLITZ_BUILD_FLAGS);
    report::fill_io_backend(out.machine);
    out.machine.io_modes.clear();
    for (io_mode_kind m : o.io_modes) {
        out.machine.io_modes += std::string(out.machine.io_modes.empty() ? "" : ", ") +
                                (m == io_mode_kind::busy ? "busy (pinned passes)" : to_string(m));
    }
    // The current-thread pass goes with the unpinned pass (a current-thread runtime is never
    // placed): a pinned-only or busy run leaves it out.
    const bool ct_pass = o.current_thread && std::find(o.policies.begin(), o.policies.end(),
                                                       placement_policy::none) != o.policies.end();
    if (ct_pass) {
        out.machine.io_modes +=
            "; a current-thread pass (W=1, with its controls) for the checkers it applies to";
    }
    suite_park_spin().reset();
    if (o.park_spin.count() > 0) {
        suite_park_spin() = o.park_spin;
        out.machine.io_modes += "; every runtime with a fixed park_spin of " +
                                std::to_string(o.park_spin.count()) + " us";
    }
    out.max_pinned = max_pinned;
    std::vector<checker_row>& rows = out.rows;
    // The run has a busy pass: busy among the modes and a pinned policy to run it under (the
    // first one also pins the busy-mode controls).
    const auto pinned = std::find_if(o.policies.begin(), o.policies.end(), [](placement_policy p) {
        return p != placement_policy::none;
    });
    const bool busy_pass_run =
        std::find(o.io_modes.begin(), o.io_modes.end(), io_mode_kind::busy) != o.io_modes.end() &&
        pinned != o.policies.end() && max_pinned > 0 && o.place_on.empty();
    unsigned checker_hangs = 0;  // outside negative controls
    auto stopped = [&] { return o.max_hangs && checker_hangs >= o.max_hangs; };
    for (const checker& c : o.hang_selftest ? hang_selftest_checkers() : all_checkers()) {
        if (!o.filter.empty() &&
            std::find(o.filter.begin(), o.filter.end(), c.id) == o.filter.end()) {
            continue;
        }
        if (stopped()) {
            ++out.not_run;
            continue;
        }
        checker_row r;
        r.c = &c;
        const auto row_started = std::chrono::steady_clock::now();
        auto one = [&](const run_params& p, const std::string& label) {
            if (stopped()) return;
            progress(c.id + " " + label);
            dog.arm(c.id + " " + label);
            const auto started = std::chrono::steady_clock::now();
            guarded g = run_guarded(c, p, /*faulty=*/false, label, hang_limit);
            out.hangs += g.hung;
            checker_hangs += g.hung;
            outcome x = std::move(g.o);
            if (!x.applicable) {
                if (r.na_reason.empty()) r.na_reason = x.note;
                return;
            }
            r.configs.push_back({label, x, seconds_since(started), false});
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
            current_placement() =
                suite_placement{placement_policy::none, 0, o.seed, io_mode_kind::shared, {}};
            for (const std::string& t : topologies) {
                for (unsigned w : o.workers) {
                    one(run_params{w, o.seed, o.quick, t},
                        topology_label(t) + " W=" + std::to_string(w));
                }
            }
        } else {
            for (placement_policy pol : o.policies) {
                for (io_mode_kind mode : o.io_modes) {
                    const bool busy = mode == io_mode_kind::busy;
                    if (busy && pol == placement_policy::none) continue;  // busy needs pinning
                    if (busy && !o.place_on.empty()) continue;            // nothing is pinned there
                    if (busy && c.needs_parking) {
                        const std::string why = "busy mode: n/a (its workers never park)";
                        if (r.total.note.find(why) == std::string::npos) {
                            r.total.note += (r.total.note.empty() ? "" : "; ") + why;
                        }
                        if (r.na_reason.empty()) r.na_reason = why;
                        continue;
                    }
                    current_placement() =
                        suite_placement{pol, max_pinned, o.seed, mode, o.place_on};
                    for (unsigned w : o.workers) {
                        if (pol != placement_policy::none && w > max_pinned) continue;
                        one(run_params{w, o.seed, o.quick, {}},
                            std::string(busy ? "busy " : "") +
                                (pol == placement_policy::none
                                     ? std::string()
                                     : to_string(pol) + std::string(" ") + placed_on) +
                                "W=" + std::to_string(w));
                    }
                }
            }
            if (ct_pass && c.current_thread) {
                current_placement() = current_thread_pass(o.seed);
                one(run_params{1, o.seed, o.quick, {}}, "current_thread W=1");
            }
            current_placement() =
                suite_placement{placement_policy::none, 0, o.seed, io_mode_kind::shared, {}};
        }
        if (stopped()) {
            // This row hung: it fails without running its control, and the suite ends here.
            r.control.detail = "not run: the suite stopped after " + std::to_string(checker_hangs) +
                               " hang(s) (--max-hangs)";
            r.seconds = seconds_since(row_started);
            rows.push_back(std::move(r));
            continue;
        }
        if (!r.applicable) {
            // E.g. Q7 with at most two workers: nothing to check, and nothing to catch. Shown as
            // n/a; it neither passes nor fails the run.
            r.seconds = seconds_since(row_started);
            rows.push_back(std::move(r));
            continue;
        }
        progress(c.id + " negative control");
        // Controls run unpinned with at least 4 workers: some faults (e.g. I2's) need 3 to show.
        const unsigned cw = std::max(4u, o.workers.empty() ? 4u : o.workers.back());
        if (c.per_topology) {
            // Caught on every topology where the fault can show, and it must show somewhere.
            unsigned applicable = 0, caught = 0;
            for (const std::string& t : topologies) {
                dog.arm(c.id + " negative control on " + topology_label(t));
                const auto started = std::chrono::steady_clock::now();
                guarded g = run_guarded(c, run_params{cw, o.seed, o.quick, t}, /*faulty=*/true,
                                        "negative control on " + topology_label(t), hang_limit);
                out.hangs += g.hung;
                outcome x = std::move(g.o);
                if (!x.applicable) continue;
                r.configs.push_back(
                    {"negative control on " + topology_label(t), x, seconds_since(started), true});
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
            // A hang under the fault is the fault caught.
            const auto started = std::chrono::steady_clock::now();
            guarded g = run_guarded(c, run_params{cw, o.seed, o.quick, {}}, /*faulty=*/true,
                                    "negative control", hang_limit);
            out.hangs += g.hung;
            r.control = std::move(g.o);
            if (r.control.applicable) {
                r.configs.push_back({"negative control W=" + std::to_string(cw), r.control,
                                     seconds_since(started), true});
            }
            r.control_na = !r.control.applicable;
            r.caught = r.control.violations > 0 || r.control_na;
            // The control once more under another pass's placement, where it must be caught
            // too (busy mode; the current-thread runtime).
            auto control_under = [&](const suite_placement& where, unsigned workers,
                                     const std::string& lbl, const char* not_caught) {
                current_placement() = where;
                dog.arm(c.id + " " + lbl);
                const auto extra_started = std::chrono::steady_clock::now();
                guarded g = run_guarded(c, run_params{workers, o.seed, o.quick, {}},
                                        /*faulty=*/true, lbl, hang_limit);
                current_placement() =
                    suite_placement{placement_policy::none, 0, o.seed, io_mode_kind::shared, {}};
                out.hangs += g.hung;
                if (!g.o.applicable) return;
                r.configs.push_back({lbl, g.o, seconds_since(extra_started), true});
                r.control.violations += g.o.violations;
                if (g.o.violations == 0) {
                    r.caught = false;
                    r.control.detail = not_caught;
                }
            };
            if (c.busy_control && busy_pass_run && !stopped()) {
                // The busy-mode variant of the control, pinned as busy mode needs.
                const unsigned bw = std::min(2u, max_pinned);
                control_under(suite_placement{*pinned, max_pinned, o.seed, io_mode_kind::busy, {}},
                              bw,
                              "negative control busy " + std::string(to_string(*pinned)) +
                                  " W=" + std::to_string(bw),
                              "not caught in busy mode");
            }
            if (ct_pass && c.current_thread && !stopped()) {
                control_under(current_thread_pass(o.seed), 1, "negative control current_thread W=1",
                              "not caught on the current-thread runtime");
            }
        }
        r.seconds = seconds_since(row_started);
        r.pass = r.total.violations == 0 && r.total.events > 0 && r.caught;
        rows.push_back(std::move(r));
    }
    progress_done();
    out.checker_hangs = checker_hangs;
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

int run_harness(const harness_options& o) {
    const suite_run r = run_checkers(o);
    int status = report_run(o, r);
    // 3 when a run hung outside the negative controls (README "exit status").
    if (status != 0 && r.checker_hangs > 0) status = 3;
    if (r.hangs > 0) {
        // An abandoned run's threads still use its runtime: end without destructors.
        std::cout.flush();
        std::cerr.flush();
        std::_Exit(status);
    }
    return status;
}

}  // namespace blitz::conformance
