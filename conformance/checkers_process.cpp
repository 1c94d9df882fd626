// SPDX-License-Identifier: MIT
// O13: signals and child processes (issue 17; IO.md 7.7). Runs on both backends and on both
// ways of awaiting a child (a pidfd registered with the driver, and SIGCHLD with waitpid).

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/rng.hpp"
#include "blitz/blitz.hpp"
#include "blitz_testing/processes.hpp"
#include "checker_util.hpp"
#include "registry.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;

// A stall guard, far above what a correct run needs: only a lost wake reaches it.
constexpr auto process_stall = 5s;

template <class F>
bool process_settled_within(F done) {
    return conformance::settled_within(std::move(done), process_stall);
}

using workloads::pid_gone;

// O13: a SIGINT raised while every worker is parked (park timeout one hour, so only the
// delivery can wake them) completes a stream's recv, through the I/O driver; and 100 children
// exiting at random times, half of them waited for (each status exact) and half dropped
// unwaited, leave no zombie once the reaper pass has run. Control: the driver drains the
// signal eventfd without waking the streams, and dropped children are never reaped.
outcome check_o13(const run_params& p, bool faulty) {
    outcome o;
    struct way {
        io_backend_kind backend;
        bool sigchld;
        const char* label;
    };
    const way ways[] = {{io_backend_kind::epoll, false, "epoll+pidfd"},
                        {io_backend_kind::prefer_io_uring, false, "prefer_io_uring+pidfd"},
                        {io_backend_kind::epoll, true, "epoll+SIGCHLD"}};
    const int children = p.quick ? 40 : 100;
    for (const way& w : ways) {
        ++o.runs;
        config c = fresh(p.workers);
        c.io_backend = w.backend;
        c.process_wait_sigchld = w.sigchld;
        c.park_timeout = std::chrono::hours(1);
        c.debug.io_signal_no_dispatch = faulty;
        c.debug.process_no_orphan_reap = faulty;
        runtime rt(c);
        // Signals: the handler puts the default action back after this delivery, so Ctrl-C on
        // the suite itself still ends it.
        signal::options once;
        once.restore_default_after_first = true;
        auto s = rt.block_on([](signal::options once) -> task<io_result<signal::signal_stream>> {
            co_return signal::signal(signal::kind::interrupt, once);
        }(once));
        if (!s) {
            forbid(o, std::string(w.label) + ": signal(SIGINT): " + s.error().message());
            continue;
        }
        auto h = rt.spawn([](signal::signal_stream s) -> task<std::uint64_t> {
            co_return co_await s.recv();
        }(std::move(*s)));
        std::this_thread::sleep_for(30ms);  // every worker parks
        ::raise(SIGINT);
        ++o.events;
        if (!process_settled_within([&] { return h.is_finished(); })) {
            forbid(o, std::string(w.label) + ": a SIGINT did not wake the parked runtime");
        } else if (h.join() < 1) {
            forbid(o, std::string(w.label) + ": the stream saw no delivery");
        }
        // Children.
        struct spawned {
            std::vector<pid_t> pids;
            int bad_status = 0, spawn_errors = 0;
        };
        const spawned r = rt.block_on([](int n, std::uint64_t seed) -> task<spawned> {
            detail::fast_rng rng(seed);
            spawned out;
            std::vector<join_handle<bool>> waits;
            for (int i = 0; i < n; ++i) {
                const std::string secs =
                    "0.0" + std::to_string(rng.bounded(50) / 10) + std::to_string(rng.bounded(10));
                auto ch = process::command("sleep").arg(secs).spawn();
                if (!ch) {
                    ++out.spawn_errors;
                    continue;
                }
                out.pids.push_back(ch->id());
                if (i % 2 == 0) {  // waited for
                    waits.push_back(spawn([](process::child ch) -> task<bool> {
                        auto st = co_await ch.wait();
                        co_return st && st->success();
                    }(std::move(*ch))));
                }  // else dropped here, unwaited
            }
            for (auto& wh : waits) {
                if (!co_await wh) ++out.bad_status;
            }
            co_return out;
        }(children, p.seed + o.runs));
        o.events += r.pids.size();
        if (r.spawn_errors) forbid(o, std::string(w.label) + ": spawn failed");
        if (r.bad_status) {
            forbid(o, std::string(w.label) + ": " + std::to_string(r.bad_status) +
                          " waited children reported a wrong status");
        }
        const bool reaped = process_settled_within([&] {
            process::reap_orphans();
            for (pid_t pid : r.pids) {
                if (!pid_gone(pid)) return false;
            }
            return true;
        });
        if (!reaped) {
            int zombies = 0;
            for (pid_t pid : r.pids) zombies += !pid_gone(pid);
            forbid(o, std::string(w.label) + ": " + std::to_string(zombies) +
                          " children still exist (zombies) after the reaper pass");
            for (pid_t pid : r.pids) {  // the control's leftovers: reap them here
                int st;
                ::waitpid(pid, &st, 0);
            }
        }
        // The control shows both parts failing on the first way; the others would only wait
        // out the same guards.
        if (faulty) break;
    }
    return o;
}

}  // namespace

std::vector<checker> process_checkers() {
    return {
        {"O13",
         "a SIGINT wakes a fully parked runtime's signal stream through the I/O driver; children "
         "exiting at random, half dropped unwaited, leave no zombie (pidfd and SIGCHLD paths)",
         "signal wakes dropped by the driver; dropped children never reaped", check_o13},
    };
}

}  // namespace blitz::conformance
