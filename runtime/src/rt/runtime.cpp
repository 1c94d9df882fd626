// SPDX-License-Identifier: MIT
#include "blitz/runtime.hpp"

#include <atomic>
#include <stdexcept>

#include "sched/scheduler.hpp"
#include "task/context_internal.hpp"

namespace blitz {

runtime::runtime(const config& cfg) {
    if (cfg.debug.clamp_workers_silently && cfg.workers > config::max_workers) {
        // I7's negative control: the bug of quietly running fewer workers than asked for.
        config capped = cfg;
        capped.workers = config::max_workers;
        capped.validate();
        sched_ = std::make_unique<detail::scheduler>(capped);
        return;
    }
    cfg.validate();
    sched_ = std::make_unique<detail::scheduler>(cfg);
}

runtime::~runtime() = default;

runtime_metrics runtime::metrics() const { return sched_->metrics(); }
probe_streams runtime::take_probes() { return sched_->take_probes(); }
unsigned runtime::num_workers() const noexcept { return sched_->num_workers(); }
const placement_report& runtime::placement() const noexcept { return sched_->placement(); }
const config& runtime::cfg() const noexcept { return sched_->cfg(); }
void runtime::shutdown() { sched_->shutdown(); }
void runtime::advance(std::chrono::nanoseconds d) { sched_->timers().advance(d); }
std::chrono::steady_clock::time_point runtime::now() const noexcept {
    return sched_->timers().now();
}

namespace detail {

void submit_spawn(scheduler* s, task_header* t) noexcept { s->spawn(t); }

void submit_blocking(scheduler* s, std::shared_ptr<blocking_job> job) {
    s->blocking().submit(std::move(job));
}

namespace {
// The current worker's scheduler or, in a destructor run by a shutdown, the draining one (the
// spawn then completes at once as cancelled); nullptr on a plain thread.
scheduler* current_or_draining() noexcept {
    if (scheduler* s = current_scheduler()) return s;
    return draining_scheduler();
}
}  // namespace

scheduler* blocking_target() {
    if (scheduler* s = current_or_draining()) return s;
    throw std::logic_error(
        "blitz::spawn_blocking: no runtime on this thread; call runtime::spawn_blocking from "
        "outside a task");
}

scheduler* spawn_target() {
    if (scheduler* s = current_or_draining()) return s;
    throw std::logic_error(
        "blitz::spawn: no runtime on this thread; call runtime::spawn from outside a task");
}

void abort_task(task_header* t) noexcept {
    if (t->request_cancel()) t->sched_->schedule(t, /*is_yield=*/false);
}

void mark_yielded(task_header* t) noexcept {
    // Waking oneself while RUNNING sets `notified`: after this poll the worker puts the task at
    // the ring tail (K2), which is exactly a yield.
    t->transition_to_scheduled(/*consume=*/false);
}

namespace {

// A waker that releases a blocked plain thread. Reference-counted so a late wake never touches
// a finished waiter's stack.
struct thread_signal {
    std::atomic<std::uint32_t> refs{1};
    std::atomic<std::uint32_t> fired{0};

    static void wake_by_ref(void* p) noexcept {
        auto* s = static_cast<thread_signal*>(p);
        s->fired.store(1, std::memory_order_release);  // release: the result is published
        s->fired.notify_one();
    }
    static void drop(void* p) noexcept {
        auto* s = static_cast<thread_signal*>(p);
        // acq_rel: the last dropper frees after every other use
        if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
    }
    static void wake(void* p) noexcept {
        wake_by_ref(p);
        drop(p);
    }
    static void* clone(void* p) noexcept {
        static_cast<thread_signal*>(p)->refs.fetch_add(1, std::memory_order_relaxed);
        return p;
    }
};
constexpr waker_vtable thread_signal_vtable{thread_signal::wake, thread_signal::wake_by_ref,
                                            thread_signal::clone, thread_signal::drop};

}  // namespace

void wait_blocking(task_header* t) {
    if (current_worker()) {
        throw std::logic_error(
            "blitz: join()/block_on() would block a runtime worker; use co_await inside tasks");
    }
    auto* sig = new thread_signal();
    sig->refs.fetch_add(1, std::memory_order_relaxed);  // ours, besides the waker's
    if (t->set_join_waker(waker(sig, &thread_signal_vtable))) {
        // acquire: pairs with the release in wake_by_ref
        while (sig->fired.load(std::memory_order_acquire) == 0) sig->fired.wait(0);
    }
    thread_signal::drop(sig);
}

}  // namespace detail
}  // namespace blitz
