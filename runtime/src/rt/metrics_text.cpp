// SPDX-License-Identifier: MIT
// runtime_metrics::to_openmetrics: the snapshot in the OpenMetrics text format (issue 46).

#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <string>

#include "blitz/metrics.hpp"

namespace blitz {
namespace {

class openmetrics_writer {
public:
    void family(const char* name, const char* type, const char* help) {
        out_ += "# TYPE ";
        out_ += name;
        out_ += ' ';
        out_ += type;
        out_ += "\n# HELP ";
        out_ += name;
        out_ += ' ';
        out_ += help;
        out_ += '\n';
    }
    void sample(const char* name, const char* suffix, const std::string& labels, std::uint64_t v) {
        out_ += name;
        out_ += suffix;
        if (!labels.empty()) {
            out_ += '{';
            out_ += labels;
            out_ += '}';
        }
        char buf[32];
        std::snprintf(buf, sizeof buf, " %" PRIu64 "\n", v);
        out_ += buf;
    }
    // One histogram's buckets, cumulative, in seconds, up to its highest non-empty bucket.
    void histogram(const char* name, const std::string& labels, const latency_histogram_data& h) {
        using data = latency_histogram_data;
        std::size_t last = 0;
        for (std::size_t b = 0; b < h.counts.size(); ++b) {
            if (h.counts[b] != 0) last = b;
        }
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b <= last && b + 1 < data::buckets && b < h.counts.size(); ++b) {
            cumulative += h.counts[b];
            char le[48];
            std::snprintf(le, sizeof le, "le=\"%.9g\"",
                          static_cast<double>(data::upper_ns(static_cast<unsigned>(b))) * 1e-9);
            sample(name, "_bucket", labels.empty() ? le : labels + "," + le, cumulative);
        }
        const std::uint64_t n = h.count();
        sample(name, "_bucket", labels.empty() ? "le=\"+Inf\"" : labels + ",le=\"+Inf\"", n);
        sample(name, "_count", labels, n);
    }
    std::string take() {
        out_ += "# EOF\n";
        return std::move(out_);
    }

private:
    std::string out_;
};

std::string worker_label(std::size_t i) { return "worker=\"" + std::to_string(i) + "\""; }

}  // namespace

std::string runtime_metrics::to_openmetrics() const {
    openmetrics_writer w;
    struct per_worker_counter {
        const char* name;
        const char* help;
        std::uint64_t worker_metrics::* field;
    };
    static constexpr per_worker_counter counters[] = {
        {"blitz_worker_polls", "Task polls run by the worker.", &worker_metrics::polls},
        {"blitz_worker_ticks", "Scheduler ticks begun.", &worker_metrics::ticks},
        {"blitz_worker_steals", "Successful steals.", &worker_metrics::steal_ops},
        {"blitz_worker_stolen_tasks", "Tasks taken by steals.", &worker_metrics::stolen_tasks},
        {"blitz_worker_parks", "Times the worker went to sleep.", &worker_metrics::parks},
        {"blitz_worker_global_fetched", "Tasks fetched from the global queue.",
         &worker_metrics::global_fetched},
        {"blitz_worker_overflowed_tasks", "Tasks moved by ring overflows.",
         &worker_metrics::overflowed_tasks},
        {"blitz_worker_spawned", "Tasks spawned by tasks on the worker.", &worker_metrics::spawned},
        {"blitz_worker_stalls", "Stalls the stall detector found on the worker.",
         &worker_metrics::stalls},
    };
    for (const auto& c : counters) {
        w.family(c.name, "counter", c.help);
        for (std::size_t i = 0; i < workers.size(); ++i)
            w.sample(c.name, "_total", worker_label(i), workers[i].*c.field);
    }
    struct per_worker_histogram {
        const char* name;
        const char* help;
        latency_histogram_data worker_metrics::* field;
    };
    static constexpr per_worker_histogram histograms[] = {
        {"blitz_poll_duration_seconds", "How long a poll ran (one poll in 64 is timed).",
         &worker_metrics::poll_ns},
        {"blitz_schedule_latency_seconds",
         "From a wake on the worker's thread to the task's poll there (sampled).",
         &worker_metrics::schedule_ns},
        {"blitz_io_latency_seconds",
         "From the I/O driver's reaping of an event to the woken task's poll (sampled).",
         &worker_metrics::io_ns},
    };
    for (const auto& h : histograms) {
        w.family(h.name, "histogram", h.help);
        for (std::size_t i = 0; i < workers.size(); ++i)
            w.histogram(h.name, worker_label(i), workers[i].*h.field);
    }
    struct runtime_value {
        const char* name;
        bool counter;  // else a gauge
        const char* help;
        std::uint64_t value;
    };
    const runtime_value values[] = {
        {"blitz_tasks_spawned", true, "Spawns accepted.", tasks_spawned},
        {"blitz_tasks_alive", false, "Task allocations not yet freed (all runtimes).", tasks_alive},
        {"blitz_global_queue_length", false, "Tasks in the global queue.", global_queue_len},
        {"blitz_workers_parked", false, "Workers asleep.", num_parked},
        {"blitz_blocking_threads", false, "Blocking-pool threads alive.", blocking_threads},
        {"blitz_blocking_queued", false, "Blocking-pool jobs waiting for a thread.",
         blocking_queued},
        {"blitz_timers_pending", false, "Timers armed and not yet fired.", timers_pending},
        {"blitz_timer_lock_waits", true, "Timer arms and cancels that waited for a shard's lock.",
         timer_lock_waits},
        {"blitz_stalls", true, "Stalls found by the stall detector.", stalls},
        {"blitz_stalls_suppressed", true, "Stall reports dropped by the rate limit.",
         stalls_suppressed},
        {"blitz_io_ops_in_flight", false, "Completion operations in flight.", io_ops_in_flight},
        {"blitz_io_events", true, "Readiness events the I/O driver dispatched.", io_events},
    };
    for (const auto& v : values) {
        w.family(v.name, v.counter ? "counter" : "gauge", v.help);
        w.sample(v.name, v.counter ? "_total" : "", "", v.value);
    }
    return w.take();
}

std::string runtime_metrics::to_json() const {
    std::ostringstream o;
    const auto hist = [&o](const char* name, const latency_histogram_data& h) {
        o << "\"" << name << "\":{\"count\":" << h.count() << ",\"p50_ns\":" << h.quantile_ns(0.5)
          << ",\"p90_ns\":" << h.quantile_ns(0.9) << ",\"p99_ns\":" << h.quantile_ns(0.99)
          << ",\"max_ns\":" << h.quantile_ns(1.0) << "}";
    };
    o << "{\"workers\":[";
    for (std::size_t i = 0; i < workers.size(); ++i) {
        const worker_metrics& w = workers[i];
        const bool parked =
            i / 64 < parked_bitmap.size() && ((parked_bitmap[i / 64] >> (i % 64)) & 1) != 0;
        o << (i ? "," : "") << "{\"index\":" << i << ",\"parked\":" << (parked ? "true" : "false")
          << ",\"ticks\":" << w.ticks << ",\"polls\":" << w.polls
          << ",\"steals\":" << w.stolen_tasks << ",\"parks\":" << w.parks
          << ",\"stalls\":" << w.stalls << ",\"avg_poll_ns\":" << w.avg_poll_ns << ",";
        hist("poll", w.poll_ns);
        o << ",";
        hist("schedule", w.schedule_ns);
        o << ",";
        hist("io", w.io_ns);
        o << "}";
    }
    o << "],\"tasks_spawned\":" << tasks_spawned << ",\"tasks_alive\":" << tasks_alive
      << ",\"global_queue_len\":" << global_queue_len << ",\"num_parked\":" << num_parked
      << ",\"num_searching\":" << num_searching << ",\"stalls\":" << stalls
      << ",\"stalls_suppressed\":" << stalls_suppressed
      << ",\"longest_stall_ns\":" << longest_stall_ns << ",\"timers_pending\":" << timers_pending
      << ",\"timers_fired\":" << timers_fired << ",\"blocking_threads\":" << blocking_threads
      << ",\"blocking_queued\":" << blocking_queued << ",\"io_backend\":\"" << io_backend
      << "\",\"io_mode\":\"" << io_mode << "\",\"io_ops_in_flight\":" << io_ops_in_flight
      << ",\"io_registered\":" << io_registered << ",";
    hist("poll", merged(&worker_metrics::poll_ns));
    o << ",";
    hist("schedule", merged(&worker_metrics::schedule_ns));
    o << ",";
    hist("io", merged(&worker_metrics::io_ns));
    o << "}";
    return o.str();
}

}  // namespace blitz
