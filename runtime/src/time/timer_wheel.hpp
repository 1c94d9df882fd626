// SPDX-License-Identifier: MIT
#pragma once
// timer_wheel: a hierarchical timing wheel of intrusive entries, in ticks of 1 ms (T1-T5).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "blitz/detail/faults.hpp"
#include "blitz/detail/timer_slot.hpp"

namespace blitz::detail {

// Five levels of 64 slots. Level L's slots are 64^L ticks wide, so the levels span 64 ms, 4.1 s,
// 4.4 min, 4.7 h and 12.4 days; deadlines further out wait in an overflow list (T1).
//
// Protocol:
//   1. insert(): an entry goes to level (index of the highest bit of (elapsed XOR deadline),
//      at least 5) / 6, in slot (deadline >> 6L) & 63; level >= 5 means the overflow list. A
//      deadline at or before `elapsed` is not linked: insert() returns false and the caller
//      fires it at once.
//   2. next_expiration(): the lowest level with an occupied slot holds the earliest expiration,
//      found with count-trailing-zeros on that level's occupancy word (T2); with an empty wheel,
//      the start of the 2^30-tick block of the earliest overflow deadline.
//   3. advance(now): repeatedly takes the next expiration at or before `now`, moves `elapsed`
//      to it and re-inserts every entry of that slot relative to the new `elapsed`: due ones
//      fire, the others cascade to a lower level (T3). Overflow entries move into the wheel when
//      their block begins.
//   4. remove(): O(1) unlink from a doubly-linked slot list (T5).
//
// Invariants: an entry in level L, slot s has the same bits above 6(L+1) as `elapsed` and
// s > (elapsed >> 6L) & 63, so its slot starts after `elapsed`; no entry fires before its
// deadline (elapsed only moves to a slot start or to `now`); size() counts linked entries.
// Thread-safety: none; the timer driver serializes access.
// Deliberate bugs for the conformance negative controls; the runtime never sets them.
struct wheel_faults {
    bool no_cascade = false;           // T3: a higher-level slot fires instead of cascading
    bool level_by_difference = false;  // T1: the level comes from deadline - elapsed, not XOR
    bool next_highest_slot = false;    // T2: next_expiration() reads the highest occupied slot
    bool remove_keeps_entry = false;   // T5: remove() leaves the entry linked
};

class timer_wheel {
public:
    static constexpr unsigned levels = 5;
    static constexpr unsigned slots = 64;
    static constexpr unsigned bits_per_level = 6;
    static constexpr std::uint64_t horizon = std::uint64_t{1} << (bits_per_level * levels);

    using faults = wheel_faults;
    explicit timer_wheel(std::uint64_t start = 0, faults f = {}) noexcept
        : elapsed_(start), faults_(f) {}
    timer_wheel(const timer_wheel&) = delete;
    timer_wheel& operator=(const timer_wheel&) = delete;

    // T1: the level for a deadline, in O(1); 5 means the overflow list.
    static unsigned level_for(std::uint64_t elapsed, std::uint64_t deadline,
                              bool by_difference = false) noexcept {
        const std::uint64_t diff =
            (by_difference ? deadline - elapsed : elapsed ^ deadline) | (slots - 1);
        const unsigned top = 63 - static_cast<unsigned>(std::countl_zero(diff));
        const unsigned level = top / bits_per_level;
        return level < levels ? level : timer_entry::overflow_level;
    }

    bool insert(timer_entry* e) noexcept;
    void remove(timer_entry* e) noexcept;

    // Fires (calls fire(entry), entry already unlinked) everything due at or before `now`, in
    // expiration order, and returns how many fired. `now` below elapsed() is ignored.
    template <class F>
    std::size_t advance(std::uint64_t now, F&& fire);

    // The tick at which advance() next has work (a slot to fire or cascade, or an overflow
    // migration); never later than the earliest deadline (T2). nullopt when empty.
    std::optional<std::uint64_t> next_expiration() const noexcept;

    std::uint64_t elapsed() const noexcept { return elapsed_; }
    std::size_t size() const noexcept { return count_; }
    std::uint64_t cascades() const noexcept { return cascades_; }
    std::uint64_t occupancy(unsigned level) const noexcept { return occupied_[level]; }

private:
    struct expiration {
        unsigned level;
        unsigned slot;
        std::uint64_t deadline;
    };
    std::optional<expiration> next_wheel_expiration() const noexcept;
    timer_entry* take_slot(unsigned level, unsigned slot) noexcept;
    timer_entry* take_overflow() noexcept;
    void link(timer_entry*& head, timer_entry* e) noexcept;

    timer_entry* wheel_[levels][slots] = {};
    std::uint64_t occupied_[levels] = {};
    timer_entry* overflow_ = nullptr;
    std::uint64_t overflow_min_ = UINT64_MAX;  // never above the true minimum (may be stale-low)
    std::uint64_t elapsed_;
    const faults faults_;
    std::size_t count_ = 0;
    std::uint64_t cascades_ = 0;
};

template <class F>
std::size_t timer_wheel::advance(std::uint64_t now, F&& fire) {
    std::size_t fired = 0;
    auto reinsert_all = [&](timer_entry* list) {
        while (list) {
            timer_entry* e = list;
            list = e->next;
            e->prev = e->next = nullptr;
            if (!insert(e)) {
                ++fired;
                fire(e);
            }
        }
    };
    for (;;) {
        if (auto x = next_wheel_expiration(); x && x->deadline <= now) {
            elapsed_ = x->deadline;
            if (x->level > 0) ++cascades_;
            timer_entry* list = take_slot(x->level, x->slot);
            if (BLITZ_FAULT(faults_.no_cascade) && x->level > 0) {
                for (timer_entry* e = list; e;) {
                    timer_entry* next = e->next;
                    e->prev = e->next = nullptr;
                    ++fired;
                    fire(e);
                    e = next;
                }
                continue;
            }
            reinsert_all(list);
            continue;
        }
        // With nothing due in the wheel before `now`, overflow entries whose 2^30-tick block has
        // begun move in (the wheel holds nothing earlier, see the invariants).
        const std::uint64_t block = overflow_min_ & ~(horizon - 1);
        if (overflow_ && block <= now) {
            if (block > elapsed_) elapsed_ = block;
            reinsert_all(take_overflow());
            continue;
        }
        break;
    }
    if (now > elapsed_) elapsed_ = now;
    return fired;
}

}  // namespace blitz::detail
