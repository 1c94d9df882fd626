// SPDX-License-Identifier: MIT
// D1: the stall detector (issue 46). A poll stuck in user code or in a blocking call is reported
// once, within the threshold plus a bound counted in the watchdog's own samples, naming the
// worker and (when the worker answered the stack signal) the task; an idle runtime is never
// reported. Runs at every worker count and in busy mode.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "checker_util.hpp"
#include "registry.hpp"
#include "sched/stall_watchdog.hpp"
#include "sched/worker.hpp"

namespace blitz::conformance {
namespace {

using namespace std::chrono_literals;
using detail::stall_watchdog;

struct stall_log {
    std::mutex mu;
    std::vector<stall_report> reports;
    std::atomic<int> count{0};
    int pipe_wr = -1;  // a byte written here releases a round blocked in read(2)
    // Set while a round blocks in read(2): the first of the report's hook and the checker's
    // watcher to take it writes the one byte that releases it.
    std::atomic<bool> read_pending{false};
    void release_read() {
        if (read_pending.exchange(false)) {
            const char b = 'r';
            (void)!::write(pipe_wr, &b, 1);
        }
    }
};

// The stuck poll: it records the sample count and its worker, then keeps the worker until a
// report arrives or `limit` samples passed (a missed report is a violation, never a hang).
struct round_result {
    std::uint64_t start_sample = 0;
    unsigned worker = 0;
};

[[gnu::noinline]] void stuck_in_user_code(runtime& rt, stall_log& log, int before,
                                          std::uint64_t limit) {
    const std::uint64_t start = rt.metrics().stall_samples;
    while (log.count.load() == before && rt.metrics().stall_samples - start < limit) {
        std::this_thread::yield();
    }
}

[[gnu::noinline]] void stuck_in_read(int fd) {
    char b = 0;
    while (::read(fd, &b, 1) < 0 && errno == EINTR) {
    }
}

outcome check_d1(const run_params& p, bool faulty) {
    outcome o;
    const auto threshold = 10ms;
    const std::uint64_t period_samples =
        static_cast<std::uint64_t>((threshold + stall_watchdog::period_for(threshold) - 1ns) /
                                   stall_watchdog::period_for(threshold));
    // Found: the first sample sure to see the stuck poll's counters (two after the one the
    // task read, as that one may have read them just before the poll began), then the
    // threshold's periods. Reported: after the worker's answer, which the answer wait bounds.
    const std::uint64_t bound_found = period_samples + 2;
    const std::uint64_t answer_wait = stall_watchdog::answer_wait_samples(threshold);
    const std::uint64_t bound_unanswered = bound_found + answer_wait;
    const std::uint64_t limit = bound_unanswered + 10;

    stall_log log;
    int fds[2];
    if (::pipe(fds) != 0) {
        forbid(o, "pipe() failed");
        return o;
    }
    log.pipe_wr = fds[1];
    config c = fresh(p.workers);
    c.stall_threshold = threshold;
    c.debug.stall_detector_blind = faulty;
    c.on_stall = [&log](const stall_report& r) {
        {
            std::lock_guard<std::mutex> l(log.mu);
            log.reports.push_back(r);
        }
        log.count.fetch_add(1);
        log.release_read();
    };
    {
        runtime rt(c);
        const int rounds = p.quick ? 4 : 12;
        for (int i = 0; i < rounds; ++i) {
            const bool in_read = i % 2 == 1;
            round_result rr;
            const int before = log.count.load();
            log.read_pending = in_read;
            auto h = rt.spawn([](runtime& r, stall_log& lg, round_result& out, bool blocking,
                                 int fd, int b, std::uint64_t lim) -> task<void> {
                out.start_sample = r.metrics().stall_samples;
                out.worker = detail::current_worker()->index();
                if (blocking) {
                    stuck_in_read(fd);
                } else {
                    stuck_in_user_code(r, lg, b, lim);
                }
                co_return;
            }(rt, log, rr, in_read, fds[0], before, limit));
            if (in_read) {
                // The watcher for a missed report: the read ends once `limit` samples passed.
                const std::uint64_t s0 = rt.metrics().stall_samples;
                while (log.count.load() == before && rt.metrics().stall_samples - s0 < limit + 2)
                    std::this_thread::sleep_for(1ms);
                log.release_read();
            }
            h.join();
            ++o.runs;
            ++o.events;
            std::vector<stall_report> got;
            {
                std::lock_guard<std::mutex> l(log.mu);
                got.assign(log.reports.begin() + before, log.reports.end());
            }
            const std::string what = in_read ? "a poll blocked in read(2)" : "a spinning poll";
            if (got.empty()) {
                forbid(o, what + " on worker " + std::to_string(rr.worker) +
                              " was not reported within " + std::to_string(limit) + " samples");
                continue;
            }
            if (got.size() > 1)
                forbid(o, what + " was reported " + std::to_string(got.size()) + " times");
            const stall_report& r = got.front();
            const bool answered = r.task_id != 0;
            const std::uint64_t found = r.detected_sample - rr.start_sample;
            if (found > bound_found) {
                forbid(o, what + " was found " + std::to_string(found) +
                              " samples after it began (bound " + std::to_string(bound_found) +
                              ")");
            }
            if (r.sample - r.detected_sample > answer_wait) {
                forbid(o, what + " was reported " + std::to_string(r.sample - r.detected_sample) +
                              " samples after it was found (the answer wait is " +
                              std::to_string(answer_wait) + ")");
            }
            if (r.worker != rr.worker) {
                forbid(o, what + " ran on worker " + std::to_string(rr.worker) +
                              " but the report names worker " + std::to_string(r.worker));
            }
            if (answered && r.task_id != h.id()) {
                forbid(o, what + ": the report names task " + std::to_string(r.task_id) +
                              ", the stuck task is " + std::to_string(h.id()));
            }
            if (!answered) ++o.interesting;  // the signal was not answered (e.g. under TSan)
        }
        // Idle: every worker parked (or spinning in busy mode) for as many samples as a report
        // takes twice over: nothing is reported.
        const int before = log.count.load();
        const std::uint64_t s0 = rt.metrics().stall_samples;
        while (rt.metrics().stall_samples - s0 < 2 * bound_found) std::this_thread::sleep_for(1ms);
        ++o.events;
        if (log.count.load() != before) forbid(o, "an idle runtime was reported stalled");
        const auto m = rt.metrics();
        o.note = std::to_string(m.stalls) + " stalls reported, longest " +
                 std::to_string(m.longest_stall_ns / 1'000'000) + " ms; " +
                 std::to_string(o.interesting) + " without an answer to the stack signal";
    }
    ::close(fds[0]);
    ::close(fds[1]);
    return o;
}

}  // namespace

std::vector<checker> debug_checkers() {
    return {
        {"D1",
         "a poll stuck past stall_threshold (spinning, or blocked in a syscall) is reported "
         "once, within the threshold plus 2 samples, naming its worker and task; an idle runtime "
         "never",
         "the detector samples but never reports (stall_detector_blind)", check_d1,
         /*per_topology=*/false, /*busy_control=*/true},
    };
}

}  // namespace blitz::conformance
