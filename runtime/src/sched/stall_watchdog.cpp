// SPDX-License-Identifier: MIT
#include "sched/stall_watchdog.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "base/stack_trace.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"

namespace blitz {

std::string stall_report::to_string() const {
    std::ostringstream os;
    os << "blitz: stall: worker " << worker << " has been in one poll for at least "
       << std::chrono::duration_cast<std::chrono::milliseconds>(duration).count() << " ms";
    if (task_id != 0) {
        os << "\n  task " << task_id;
        if (spawn_site_known) {
            os << ", spawned at " << spawn_site.file_name() << ":" << spawn_site.line() << " ("
               << spawn_site.function_name() << ")";
        }
    }
    if (queued_behind != 0 || io_in_flight != 0) {
        os << "\n  holding up " << queued_behind << " queued task"
           << (queued_behind == 1 ? "" : "s") << " and " << io_in_flight << " I/O operation"
           << (io_in_flight == 1 ? "" : "s") << " on its own ring";
    }
    if (suppressed_before != 0) {
        os << "\n  (" << suppressed_before << " earlier report"
           << (suppressed_before == 1 ? "" : "s") << " dropped by the rate limit)";
    }
    if (!stack.empty()) {
        os << "\n  stack:";
        for (const auto& f : stack) os << "\n    " << f;
    }
    if (!stack_note.empty()) os << "\n  " << stack_note;
    os << "\n";
    return os.str();
}

}  // namespace blitz

namespace blitz::detail {

namespace {

constinit thread_local stall_probe* tl_stall_probe = nullptr;

// The handlers installed before ours, by signal number, to chain to for signals that are not
// a stall request (another thread, or no request outstanding).
struct sigaction stall_previous_actions[NSIG];
bool stall_handler_installed[NSIG] = {};
std::mutex stall_install_mutex;

void chain_stall_signal(int sig, siginfo_t* info, void* uc) {
    const struct sigaction& old = stall_previous_actions[sig];
    if (old.sa_flags & SA_SIGINFO) {
        if (old.sa_sigaction) old.sa_sigaction(sig, info, uc);
    } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler) {
        old.sa_handler(sig);
    }
}

// Runs on the signalled worker's own thread, inside whatever it was doing: it reads only that
// thread's state (its current task, alive while its poll runs; its LIFO slot and ring length)
// and the unwinder, which is async-signal-safe here (base/stack_trace.hpp).
void on_stall_signal(int sig, siginfo_t* info, void* uc) {
    const int saved_errno = errno;
    stall_probe* p = tl_stall_probe;
    const std::uint32_t req = p ? p->request.load(std::memory_order_acquire) : 0;
    if (p == nullptr || req == p->answered.load(std::memory_order_relaxed)) {
        chain_stall_signal(sig, info, uc);
        errno = saved_errno;
        return;
    }
    const task_header* t = current_task();
    p->polling = t != nullptr;
    p->task_id = t ? t->id_in_signal_handler() : 0;
    p->site = t ? t->spawn_site() : std::source_location{};
    p->queued = 0;
    if (worker* w = current_worker()) p->queued = (w->lifo_peek() ? 1 : 0) + w->ring().len();
    // Skip this handler's frame and the signal trampoline's (glibc's __restore_rt; the vDSO's
    // on arm64): the stack starts in the interrupted code.
    p->frames = t ? capture_stack(p->pcs, stall_probe::max_frames, 2) : 0;
    p->answered.store(req, std::memory_order_release);
    errno = saved_errno;
}

void install_handler(int sig) {
    std::lock_guard<std::mutex> lock(stall_install_mutex);
    if (stall_handler_installed[sig]) return;
    warm_up_stack_capture();  // the unwinder's first use, outside any handler
    struct sigaction sa{};
    sa.sa_sigaction = on_stall_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;  // a blocking call the signal interrupts resumes
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &stall_previous_actions[sig]) == 0) stall_handler_installed[sig] = true;
}

}  // namespace

void set_thread_stall_probe(stall_probe* p) noexcept { tl_stall_probe = p; }

std::chrono::nanoseconds stall_watchdog::period_for(std::chrono::nanoseconds threshold) noexcept {
    return std::max<std::chrono::nanoseconds>(threshold / 16, std::chrono::milliseconds(1));
}

unsigned stall_watchdog::answer_wait_samples(std::chrono::nanoseconds threshold) noexcept {
    // An answer normally comes within microseconds; wait up to 100 ms (and 4 samples) for a
    // thread the OS is not running, before reporting without the task and stack.
    const auto p = period_for(threshold);
    const auto n = std::chrono::milliseconds(100) / p;
    return static_cast<unsigned>(std::max<std::int64_t>(4, n));
}

stall_watchdog::stall_watchdog(scheduler& s)
    : sched_(s),
      cfg_(s.cfg()),
      threshold_(cfg_.stall_threshold),
      period_(period_for(cfg_.stall_threshold)),
      answer_wait_(answer_wait_samples(cfg_.stall_threshold)),
      watch_(s.num_workers()),
      per_worker_(std::make_unique<atomic<std::uint64_t>[]>(s.num_workers())) {}

stall_watchdog::~stall_watchdog() { stop(); }

void stall_watchdog::start() {
    if (cfg_.stall_signal != 0) install_handler(cfg_.stall_signal);
    thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "blitz-watchdog");
        run();
    });
}

void stall_watchdog::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::uint64_t stall_watchdog::detected_on(unsigned worker) const noexcept {
    return per_worker_[worker].load(std::memory_order_relaxed);
}

void stall_watchdog::run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
        const bool dozed = doze_.dozing();
        cv_.wait_for(lock, dozed ? threshold_ : period_, [this] { return stop_ || nudged_; });
        if (stop_) break;
        nudged_ = false;
        lock.unlock();
        doze_.withdraw();
        // relaxed: a count (this thread is its only writer)
        if (dozed)
            doze_samples_.store(doze_samples_.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
        sample();
        lock.lock();
    }
}

void stall_watchdog::wake_if_dozing() noexcept {
    if (!doze_.wake()) return;
    nudges_.fetch_add(1, std::memory_order_relaxed);  // a count
    {
        std::lock_guard<std::mutex> lock(mu_);
        nudged_ = true;
    }
    cv_.notify_one();
}

void stall_watchdog::sample() {
    // relaxed: a count read by tests and metrics; the samples themselves read the workers'
    // counters, which are relaxed single-writer values.
    const std::uint64_t n = samples_.load(std::memory_order_relaxed) + 1;
    samples_.store(n, std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    idle_state& idle = sched_.idle();
    for (unsigned i = 0; i < watch_.size(); ++i) {
        worker& wk = sched_.worker_at(i);
        watch& w = watch_[i];
        const signature sig{wk.counter_value(worker::c_polls), wk.counter_value(worker::c_ticks),
                            wk.counter_value(worker::c_busy_polls)};
        const bool parked = (idle.bitmap_of(i) >> (i % 64)) & 1;
        if (parked || sig != w.sig) {
            // A stall that ended after the worker answered, before this sample read the answer:
            // it was a poll of at least the threshold, so it is reported all the same.
            if (w.ph == phase::asked &&
                wk.stall_probe_slot().answered.load(std::memory_order_acquire) == w.seq &&
                wk.stall_probe_slot().polling) {
                report(i, w, now, /*answered=*/true);
            }
            if (w.ph == phase::reported) {
                // The stall ended (its last sample saw it still running).
                const auto ns = static_cast<std::uint64_t>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now - w.first).count());
                if (ns > longest_.load(std::memory_order_relaxed))
                    longest_.store(ns, std::memory_order_relaxed);
            }
            w = watch{sig, now, phase::watching, w.seq, 0};
            continue;
        }
        if (w.ph == phase::watching && now - w.first >= threshold_ &&
            !BLITZ_FAULT(cfg_.debug.stall_detector_blind)) {
            w.asked_at = n;
            ask(i, w);
            if (cfg_.stall_signal == 0) {
                // No signal to ask with: a worker inside a poll is reported without its task
                // and stack (ask() found it idle otherwise).
                if (w.ph == phase::asked) report(i, w, now, /*answered=*/false);
                continue;
            }
            // A running thread answers within microseconds: wait up to 2 ms for it, so that the
            // report goes out in this sample rather than the next (within the threshold plus
            // one period of the poll's start). One that has not answered by then is looked at
            // again at each sample, up to the answer wait.
            stall_probe& p = wk.stall_probe_slot();
            for (int k = 0; k < 40 && w.ph == phase::asked &&
                            p.answered.load(std::memory_order_acquire) != w.seq;
                 ++k)
                std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        if (w.ph == phase::asked) {
            stall_probe& p = wk.stall_probe_slot();
            if (p.answered.load(std::memory_order_acquire) == w.seq) {
                if (p.polling) {
                    report(i, w, now, /*answered=*/true);
                } else {
                    w.ph = phase::idle;  // not in a poll: left alone until its counters move
                }
            } else if (n - w.asked_at >= answer_wait_) {
                report(i, w, now, /*answered=*/false);
            }
        }
    }
    // Every worker parked: no poll can stall before one wakes, and the first to run a poll
    // wakes the watchdog (wake_if_dozing). Doze only if the bits still say so after dozing_ is
    // published (see dozing()).
    if (all_parked()) (void)doze_.try_doze([this] { return all_parked(); });
}

bool stall_watchdog::all_parked() const noexcept {
    const idle_state& idle = sched_.idle();
    for (unsigned k = 0; k < idle.bitmap_words(); ++k) {
        const unsigned in_word = std::min(64u, sched_.num_workers() - 64 * k);
        const std::uint64_t want =
            in_word == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << in_word) - 1;
        if ((idle.bitmap_word(k) & want) != want) return false;
    }
    return true;
}

void stall_watchdog::ask(unsigned i, watch& w) {
    stall_probe& p = sched_.worker_at(i).stall_probe_slot();
    // The worker's thread, its task slot and its id stay valid while `busy` is up: a worker
    // leaving its run loop clears tid, then waits for busy to fall (seq_cst on both sides, so
    // either this sees tid cleared or the worker sees busy raised and waits).
    p.watchdog_busy.store(true, std::memory_order_seq_cst);
    const int tid = p.tid.load(std::memory_order_seq_cst);
    // Only a worker inside a poll is signalled: a signal interrupts the wait of an idle worker
    // (an epoll_wait, a futex) and would hide a lost wake (O2's control) by ending it.
    if (tid == 0 || load_task_slot(*p.polling_slot) == nullptr) {
        w.ph = phase::idle;  // between polls (an idle worker the OS has not run, a claimed one
                             // not yet awake): left alone until its counters move
    } else {
        w.ph = phase::asked;
        if (cfg_.stall_signal != 0) {
            w.seq = p.request.load(std::memory_order_relaxed) + 1;
            p.request.store(w.seq, std::memory_order_release);
            ::syscall(SYS_tgkill, ::getpid(), tid, cfg_.stall_signal);
        }
    }
    p.watchdog_busy.store(false, std::memory_order_release);
}

void stall_watchdog::report(unsigned i, watch& w, std::chrono::steady_clock::time_point now,
                            bool answered) {
    w.ph = phase::reported;
    const auto so_far = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - w.first).count());
    if (so_far > longest_.load(std::memory_order_relaxed))
        longest_.store(so_far, std::memory_order_relaxed);
    detected_.fetch_add(1, std::memory_order_relaxed);
    per_worker_[i].fetch_add(1, std::memory_order_relaxed);
    // The rate limit: a bucket of 16 reports that refills at one a second.
    const double secs = std::chrono::duration<double>(now - refilled_).count();
    refilled_ = now;
    tokens_ = std::min(16.0, tokens_ + secs);
    if (tokens_ < 1.0) {
        ++suppressed_since_;
        suppressed_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    tokens_ -= 1.0;
    stall_report r;
    r.worker = i;
    r.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(now - w.first);
    r.detected_sample = w.asked_at;
    r.sample = samples_.load(std::memory_order_relaxed);
    r.suppressed_before = std::exchange(suppressed_since_, 0);
    r.io_in_flight = sched_.driver().worker_ops_in_flight(i);
    worker& wk = sched_.worker_at(i);
    if (answered) {
        const stall_probe& p = wk.stall_probe_slot();
        r.task_id = p.task_id;
        r.spawn_site = p.site;
        r.spawn_site_known = p.site.line() != 0;
        r.queued_behind = p.queued;
        r.stack = symbolize(p.pcs, p.frames);
    } else {
        r.queued_behind = wk.ring().len();
        if (cfg_.stall_signal == 0) {
            r.stack_note = "no task or stack: config::stall_signal is 0";
        } else {
            std::ostringstream os;
            os << "no task or stack: the worker did not answer signal " << cfg_.stall_signal << " ("
               << strsignal(cfg_.stall_signal) << ") within " << answer_wait_
               << " samples (the signal blocked on that thread, a sanitizer that delays "
                  "signals, or a thread the OS is not running)";
            r.stack_note = os.str();
        }
    }
    deliver(r);
}

void stall_watchdog::deliver(stall_report& r) {
    if (cfg_.on_stall) {
        try {
            cfg_.on_stall(r);
        } catch (...) {
            // A hook's exception must not end the watchdog (config::on_stall).
        }
        return;
    }
    const std::string text = r.to_string();
    std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace blitz::detail
