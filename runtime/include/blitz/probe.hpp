// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// Probe events: what the scheduler decided, recorded per worker when config::probes is on.
// The conformance checkers read these streams (DESIGN.md section 4).

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace blitz {

// Where a polled task came from (G3).
enum class poll_source : std::uint8_t { lifo, ring, global, steal, pinned };

enum class probe_kind : std::uint16_t {
    tick_begin,  // a: tick number
    tick_end,    // a: polls; when a > 0, b: tick duration ns, c: interval << 32 | avg poll ns (G5)
    poll,        // a: poll_source, b: task address, c: choice_* bits of what was available (G3)
    lifo_flush,  // the LIFO cap moved the slot's task to the ring (L2); b: task address
    steal,       // a: victim, b: tasks available at claim, c: tasks taken (Q5)
    global_fetch,  // a: bit 0 periodic (G4), bits 1+ ring length (G7), b: tasks fetched, c: queue
                   // length seen (G2)
    overflow,      // b: tasks moved to the global queue (Q4)
    search_begin,  // became a searcher (I1); a: count the gate compared, b: searchers after joining
    search_end,    // stopped searching; a: 1 if it was the last searcher
    park,          // a: 1 if it was the last searcher, b: the worker's parked-bitmap word (its
                   // index / 64) after setting its bit
    unpark,        // a: 0 claimed (notified), 1 timeout, 2 spurious/shutdown, 3 I/O events;
                   // b: the worker's bitmap word
    wake_claim,    // a worker claimed a parked one (I2, I3); a: claimed index, b: the bitmap word
                   // it was chosen from (a % 64 is its lowest set bit), c: searchers seen by the
                   // decision to wake
    timer_fire,    // b: timers fired
    steal_walk,    // one walk over victims (Q7); a: first victim, b: bitmask of the victims below
                   // 64 tried, c: victims tried (all others unless a steal succeeded)
    steal_attempt,   // NUMA-aware stealing only (N4): a: the victim tried, in walk order; the
                     // walk's steal_walk event follows its attempts
    periodic_check,  // the periodic global check was made (G4, G8), whether or not it found work
    notify,  // the wake a last searcher owes when it found work (I4, I8): a: 1 if it claimed
             // a parked worker, 0 if nobody was parked or another searcher appeared, 2 if no
             // other work was queued (no wake needed)
};

// The config::probe_kinds mask that records `kinds` and nothing else.
constexpr std::uint32_t probe_kinds_of(std::initializer_list<probe_kind> kinds) noexcept {
    std::uint32_t m = 0;
    for (const probe_kind k : kinds) m |= std::uint32_t{1} << static_cast<unsigned>(k);
    return m;
}
static_assert(static_cast<unsigned>(probe_kind::notify) < 32, "probe_kinds is a 32-bit mask");

// Bits of a poll event's `c`: the worker's own sources that held work when it chose the task,
// and whether the choice was the periodic global check (G3).
inline constexpr std::uint64_t choice_lifo = 2, choice_ring = 4, choice_periodic = 8;

// One event (32 bytes). `ns` is steady_clock time since the runtime started.
struct probe_event {
    std::uint64_t ns;
    probe_kind kind;
    std::uint16_t worker;
    std::uint32_t a;
    std::uint64_t b;
    std::uint64_t c;
};
static_assert(sizeof(probe_event) == 32);

// Everything recorded since the last take, per worker, oldest first. `dropped` counts events
// lost because a worker's ring was full (a checker must treat such a stream as incomplete).
struct probe_streams {
    std::vector<std::vector<probe_event>> workers;
    std::uint64_t dropped = 0;
};

}  // namespace blitz
