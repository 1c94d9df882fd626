// SPDX-License-Identifier: MIT
#pragma once
// The stall detector (issue 46, INVARIANTS D1): a watchdog thread per runtime that finds a
// worker stuck in one poll and reports it with the task and the worker's native stack.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <source_location>
#include <thread>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/config.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/stall.hpp"
#include "sched/doze_gate.hpp"

namespace blitz::detail {

class scheduler;

// What a stalled worker's signal handler tells the watchdog (one per worker, in the worker).
//
// Protocol: the worker publishes its kernel thread id in `tid` (and its task slot in
// polling_slot) while its run loop lives, and points its thread's stall slot at this probe. To ask,
// the watchdog (the only writer of `request`) stores a new sequence number in `request` and sends
// config::stall_signal to `tid`. The handler, on the worker's own thread, sees request != answered,
// fills the fields below from the thread's current task, its queues and its stack, and stores the
// sequence in `answered`. The watchdog reads the fields only after it saw answered == request.
// Invariants: the fields belong to the handler between a request and its answer, and to the
// watchdog otherwise; a request is outstanding at most once at a time.
// Memory ordering: request is stored release before the signal (the handler's acquire sees
// it); answered is stored release after the fields (the watchdog's acquire load sees them).
// Thread-safety: the watchdog and the worker's signal handler only, as above.
struct stall_probe {
    static constexpr std::size_t max_frames = 48;
    atomic<int> tid{0};
    // The worker thread's tl_task (the task it is polling), set before tid is published: the
    // watchdog signals only a worker inside a poll. watchdog_busy: up while the watchdog reads
    // the slot or signals the thread (see stall_watchdog::ask).
    const decltype(tl_task)* polling_slot = nullptr;
    atomic<bool> watchdog_busy{false};
    atomic<std::uint32_t> request{0};
    atomic<std::uint32_t> answered{0};
    // Filled by the handler:
    bool polling = false;  // a task's poll was running when the signal came
    std::uint64_t task_id = 0;
    std::source_location site{};
    std::uint64_t queued = 0;  // the LIFO slot's task and the ring's
    std::size_t frames = 0;
    void* pcs[max_frames] = {};
};

// The calling thread's probe (a worker sets it for its run loop; nullptr elsewhere).
void set_thread_stall_probe(stall_probe* p) noexcept;

// One per runtime with config::stall_threshold > 0. Every period (threshold / 16, at least
// 1 ms) it reads each worker's poll, tick and busy-look counters and the parked bitmap. A
// worker that is not parked and whose counters have not moved since a sample `threshold` ago
// is suspected; the watchdog asks it (stall_probe) and, if a poll is running, reports the
// stall once: to config::on_stall, or to stderr (rate-limited: 16 at once, then one a
// second). A worker that answers that it is not polling is left alone until its counters
// move; one that does not answer within the answer wait (signals blocked, a sanitizer that
// delays them, a thread the OS does not run) is reported without its task and stack.
// Thread-safety: start and stop from the thread that owns the scheduler; counters from any.
class stall_watchdog {
public:
    explicit stall_watchdog(scheduler& s);
    ~stall_watchdog();
    stall_watchdog(const stall_watchdog&) = delete;
    stall_watchdog& operator=(const stall_watchdog&) = delete;

    void start();  // after the workers started
    void stop();   // after the workers were joined; idempotent

    std::uint64_t samples() const noexcept { return samples_.load(std::memory_order_relaxed); }
    std::uint64_t detected() const noexcept { return detected_.load(std::memory_order_relaxed); }
    std::uint64_t suppressed() const noexcept {
        return suppressed_.load(std::memory_order_relaxed);
    }
    std::uint64_t longest_ns() const noexcept { return longest_.load(std::memory_order_relaxed); }
    std::uint64_t doze_samples() const noexcept {
        return doze_samples_.load(std::memory_order_relaxed);
    }
    std::uint64_t nudges() const noexcept { return nudges_.load(std::memory_order_relaxed); }
    std::uint64_t detected_on(unsigned worker) const noexcept;

    // Dozing: after a sample that found every worker parked, the watchdog waits up to the
    // threshold instead of one period, so an idle runtime costs it a wakeup per threshold
    // rather than 16. A worker leaving its park (before its next poll) calls wake_if_dozing().
    // Memory ordering: the watchdog stores dozing (seq_cst) and then reads the parked bits
    // (seq_cst) again; a worker's bit is cleared (seq_cst RMW) before it reads dozing: either
    // the watchdog sees the worker awake and does not doze, or the worker sees it dozing and
    // wakes it.
    bool dozing() const noexcept { return doze_.dozing(); }
    void wake_if_dozing() noexcept;

    // The sample period for a threshold, and how many samples a request may go unanswered.
    static std::chrono::nanoseconds period_for(std::chrono::nanoseconds threshold) noexcept;
    static unsigned answer_wait_samples(std::chrono::nanoseconds threshold) noexcept;

private:
    struct signature {
        std::uint64_t polls = 0, ticks = 0, busy = 0;
        bool operator==(const signature&) const = default;
    };
    enum class phase : std::uint8_t { watching, asked, idle, reported };
    struct watch {
        signature sig;
        std::chrono::steady_clock::time_point first{};  // the sample that first saw sig
        phase ph = phase::watching;
        std::uint32_t seq = 0;       // the outstanding request (phase asked)
        std::uint64_t asked_at = 0;  // the sample that sent it
    };

    void run();
    void sample();
    void ask(unsigned i, watch& w);
    bool all_parked() const noexcept;
    void report(unsigned i, watch& w, std::chrono::steady_clock::time_point now, bool answered);
    void deliver(stall_report& r);

    scheduler& sched_;
    const config& cfg_;
    const std::chrono::nanoseconds threshold_;
    const std::chrono::nanoseconds period_;
    const unsigned answer_wait_;
    std::vector<watch> watch_;  // watchdog thread only
    double tokens_ = 16;        // the rate limit's bucket (watchdog thread only)
    std::chrono::steady_clock::time_point refilled_ = std::chrono::steady_clock::now();
    std::uint64_t suppressed_since_ = 0;
    std::unique_ptr<atomic<std::uint64_t>[]> per_worker_;
    atomic<std::uint64_t> samples_{0}, detected_{0}, suppressed_{0}, longest_{0};
    atomic<std::uint64_t> doze_samples_{0}, nudges_{0};  // counts, for metrics and tests
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool nudged_ = false;  // under mu_: a worker woke the dozing watchdog
    doze_gate doze_;       // sched/doze_gate.hpp
    std::thread thread_;
};

}  // namespace blitz::detail
