// SPDX-License-Identifier: MIT
#include "blitz/runtime.hpp"

#include <stdexcept>
#include <string>

#include "blitz/detail/faults.hpp"
#include "blitz/sync/cancellation_token.hpp"
#include "blitz/task_scope.hpp"
#include "blitz/time.hpp"
#include "rt/runtime_core.hpp"

namespace blitz {

runtime::runtime(const config& cfg) {
    if (BLITZ_FAULT(cfg.debug.clamp_workers_silently) && cfg.workers > config::max_workers) {
        // I7's negative control: the bug of quietly running fewer workers than asked for.
        config capped = cfg;
        capped.workers = config::max_workers;
        capped.validate();
        core_ = std::make_unique<detail::runtime_core>(capped);
    } else {
        cfg.validate();
        core_ = std::make_unique<detail::runtime_core>(cfg);
    }
    sched_ = &core_->sched();
    pool_ = &core_->blocking();
}

runtime::~runtime() = default;

runtime_metrics runtime::metrics() const { return core_->metrics(); }
probe_streams runtime::take_probes() { return core_->sched().take_probes(); }
runtime_dump runtime::dump(std::chrono::milliseconds wait) const {
    if (core_->sched().shutting_down()) return {};
    return core_->sched().dump(wait);
}
lost_report runtime::find_lost(std::chrono::milliseconds wait) const {
    if (core_->sched().shutting_down()) return {};
    return core_->find_lost(wait);
}
unsigned runtime::num_workers() const noexcept { return core_->sched().num_workers(); }

detail::task_scheduler* runtime::pinned_scheduler(unsigned worker) const {
    detail::scheduler& s = core_->sched();
    if (worker >= s.num_workers()) {
        throw std::out_of_range("blitz::runtime::spawn_pinned: worker " + std::to_string(worker) +
                                " of a runtime with " + std::to_string(s.num_workers()) +
                                " workers");
    }
    return &s.pinned_home_of(worker);
}

namespace detail {
task_scheduler* pinned_target_here() {
    if (worker* w = current_worker()) return &w->sched().pinned_home_of(w->index());
    if (!tl_runtime && tl_draining) return tl_draining->sched;  // cancelled at once
    throw std::logic_error(
        "blitz::spawn_local: not on a runtime worker; call runtime::spawn_pinned from outside a "
        "task");
}
}  // namespace detail

int this_worker_index() noexcept {
    const detail::worker* w = detail::current_worker();
    return w ? static_cast<int>(w->index()) : -1;
}
const placement_report& runtime::placement() const noexcept { return core_->placement(); }
const config& runtime::cfg() const noexcept { return core_->cfg(); }
void runtime::shutdown() { core_->shutdown(); }

bool runtime::shutdown_timeout(std::chrono::nanoseconds d, task_tracker* tracked,
                               const cancellation_token* stop) {
    if (stop) stop->cancel();
    bool in_time = true;
    if (tracked) {
        tracked->close();
        in_time = block_on([](task_tracker& t, std::chrono::nanoseconds d) -> task<bool> {
            auto r = co_await timeout(d, t.wait());
            co_return !r.timed_out();
        }(*tracked, d));
    }
    shutdown();
    return in_time;
}
void runtime::advance(std::chrono::nanoseconds d) { core_->timers().advance(d); }
std::chrono::steady_clock::time_point runtime::now() const noexcept {
    return core_->timers().now();
}

}  // namespace blitz
