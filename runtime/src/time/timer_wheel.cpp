// SPDX-License-Identifier: MIT
#include "time/timer_wheel.hpp"

#include <cassert>

#include "blitz/detail/faults.hpp"

namespace blitz::detail {

void timer_wheel::link(timer_entry*& head, timer_entry* e) noexcept {
    e->prev = nullptr;
    e->next = head;
    if (head) head->prev = e;
    head = e;
}

bool timer_wheel::insert(timer_entry* e) noexcept {
    assert(!e->linked());
    if (e->deadline <= elapsed_) return false;  // due already: the caller fires it
    const unsigned level =
        level_for(elapsed_, e->deadline, BLITZ_FAULT(faults_.level_by_difference));
    ++count_;
    if (level == timer_entry::overflow_level) {
        e->level = timer_entry::overflow_level;
        link(overflow_, e);
        if (e->deadline < overflow_min_) overflow_min_ = e->deadline;
        return true;
    }
    const unsigned slot =
        static_cast<unsigned>(e->deadline >> (bits_per_level * level)) & (slots - 1);
    e->level = static_cast<std::uint8_t>(level);
    e->slot = static_cast<std::uint8_t>(slot);
    link(wheel_[level][slot], e);
    occupied_[level] |= std::uint64_t{1} << slot;
    return true;
}

void timer_wheel::remove(timer_entry* e) noexcept {
    if (!e->linked() || BLITZ_FAULT(faults_.remove_keeps_entry)) return;
    timer_entry*& head =
        e->level == timer_entry::overflow_level ? overflow_ : wheel_[e->level][e->slot];
    if (e->prev) {
        e->prev->next = e->next;
    } else {
        head = e->next;
    }
    if (e->next) e->next->prev = e->prev;
    if (e->level != timer_entry::overflow_level && !head) {
        occupied_[e->level] &= ~(std::uint64_t{1} << e->slot);
    }
    e->prev = e->next = nullptr;
    e->level = timer_entry::unlinked;
    --count_;
}

std::optional<timer_wheel::expiration> timer_wheel::next_wheel_expiration() const noexcept {
    for (unsigned level = 0; level < levels; ++level) {
        const std::uint64_t occ = occupied_[level];
        if (!occ) continue;
        const unsigned shift = bits_per_level * level;
        const std::uint64_t slot_range = std::uint64_t{1} << shift;
        const std::uint64_t level_range = slot_range << bits_per_level;
        const unsigned cur = static_cast<unsigned>(elapsed_ >> shift) & (slots - 1);
        // Occupied slots lie after the current one (see the invariants).
        const std::uint64_t after = cur == slots - 1 ? 0 : occ & (~std::uint64_t{0} << (cur + 1));
        assert(after == occ && "an occupied slot at or before the current one");
        const unsigned slot = static_cast<unsigned>(std::countr_zero(after ? after : occ));
        std::uint64_t deadline = (elapsed_ & ~(level_range - 1)) + slot * slot_range;
        if (!after) deadline += level_range;  // defensive: never reached while invariants hold
        return expiration{level, slot, deadline};
    }
    return std::nullopt;
}

std::optional<std::uint64_t> timer_wheel::next_expiration() const noexcept {
    if (auto x = next_wheel_expiration()) {
        if (BLITZ_FAULT(
                faults_.next_highest_slot)) {  // T2's fault: the last occupied slot of that level
            const unsigned shift = bits_per_level * x->level;
            const unsigned top = 63 - static_cast<unsigned>(std::countl_zero(occupied_[x->level]));
            return (elapsed_ & ~((std::uint64_t{1} << (shift + bits_per_level)) - 1)) +
                   (std::uint64_t{top} << shift);
        }
        return x->deadline;
    }
    if (overflow_) {
        const std::uint64_t block = overflow_min_ & ~(horizon - 1);
        return block > elapsed_ ? block : elapsed_;
    }
    return std::nullopt;
}

timer_entry* timer_wheel::take_slot(unsigned level, unsigned slot) noexcept {
    timer_entry* list = wheel_[level][slot];
    wheel_[level][slot] = nullptr;
    occupied_[level] &= ~(std::uint64_t{1} << slot);
    for (timer_entry* e = list; e; e = e->next) {
        e->level = timer_entry::unlinked;
        --count_;
    }
    return list;
}

timer_entry* timer_wheel::take_overflow() noexcept {
    timer_entry* list = overflow_;
    overflow_ = nullptr;
    overflow_min_ = UINT64_MAX;  // rebuilt by the re-insertions that land back in overflow
    for (timer_entry* e = list; e; e = e->next) {
        e->level = timer_entry::unlinked;
        --count_;
    }
    return list;
}

}  // namespace blitz::detail
