// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::stall_report: what the stall detector (config::stall_threshold) says about a worker
// whose current poll has run too long (issue 46; docs/guide/debugging.md).

#include <chrono>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

namespace blitz {

// One stall: a worker whose poll has run at least config::stall_threshold. The detector
// reports each stall once (rate-limited, see config::on_stall), while it lasts.
struct stall_report {
    unsigned worker = 0;
    // How long the poll had run when the report was made: at least this long (the detector
    // samples the workers, so the poll may have started up to one sample period earlier).
    std::chrono::nanoseconds duration{0};
    // The task being polled: its id (blitz::task_id; 0 when the worker did not answer the
    // stack signal, see stack_note) and where it was spawned.
    std::uint64_t task_id = 0;
    std::source_location spawn_site{};
    bool spawn_site_known = false;
    // The worker's native stack at the report, innermost first, symbolized
    // ("#0 0x... function+0xoff (module)"); empty when it could not be taken, and stack_note
    // says why (config::stall_signal 0, the signal blocked on that thread, or a sanitizer that
    // delays signals until the thread makes a call it intercepts).
    std::vector<std::string> stack;
    std::string stack_note;
    // What the stall holds up: tasks queued in the worker's own LIFO slot and ring (nobody runs
    // them until a thief steals them or the poll returns), and completion operations in flight
    // on the worker's own io_uring ring (only the owner can reap them).
    std::uint64_t queued_behind = 0;
    std::uint64_t io_in_flight = 0;
    // Reports dropped by the rate limit since the previous report.
    std::uint64_t suppressed_before = 0;
    // The detector's sample count (runtime_metrics::stall_samples counts the same samples)
    // when it found the stall, and when it made this report (after the worker's answer to the
    // stack signal, at most answer-wait samples later): bounds in samples, not in time.
    std::uint64_t detected_sample = 0;
    std::uint64_t sample = 0;

    // The block the default hook writes to stderr.
    std::string to_string() const;
};

}  // namespace blitz
