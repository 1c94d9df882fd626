// SPDX-License-Identifier: MIT
#pragma once
// The 64-bit packed task state word (INVARIANTS K1) and its pure helpers.

#include <cstdint>

namespace blitz::detail {

// Bit layout of task_header::state_ (K1):
//
//   63                 40 39       32 31      24 23       16 15        0
//  +---------------------+-----------+----------+-----------+-----------+
//  |   ref_count (24)    | shield(8) | flags(8) | lifecycle | reserved  |
//  +---------------------+-----------+----------+-----------+-----------+
//
// flags: bit 24 notified, 25 cancelled, 26 join_interest, 27 detached, 28 join_waker (a join
// waker is registered and owned by the completer once the task is complete).
namespace state {

inline constexpr unsigned ref_shift = 40;
inline constexpr unsigned shield_shift = 32;
inline constexpr unsigned flags_shift = 24;
inline constexpr unsigned lifecycle_shift = 16;

inline constexpr std::uint64_t ref_one = std::uint64_t{1} << ref_shift;
inline constexpr std::uint64_t ref_mask = std::uint64_t{0xFFFFFF} << ref_shift;
inline constexpr std::uint64_t shield_one = std::uint64_t{1} << shield_shift;
inline constexpr std::uint64_t shield_mask = std::uint64_t{0xFF} << shield_shift;
inline constexpr std::uint64_t lifecycle_mask = std::uint64_t{0xFF} << lifecycle_shift;

inline constexpr std::uint64_t notified = std::uint64_t{1} << (flags_shift + 0);
inline constexpr std::uint64_t cancelled = std::uint64_t{1} << (flags_shift + 1);
inline constexpr std::uint64_t join_interest = std::uint64_t{1} << (flags_shift + 2);
inline constexpr std::uint64_t detached = std::uint64_t{1} << (flags_shift + 3);
inline constexpr std::uint64_t join_waker = std::uint64_t{1} << (flags_shift + 4);

enum class lifecycle : std::uint8_t { idle = 0, scheduled = 1, running = 2, complete = 3 };

inline constexpr std::uint64_t lifecycle_bits(lifecycle l) {
    return std::uint64_t{static_cast<std::uint8_t>(l)} << lifecycle_shift;
}
inline constexpr lifecycle lifecycle_of(std::uint64_t s) {
    return static_cast<lifecycle>((s & lifecycle_mask) >> lifecycle_shift);
}
inline constexpr std::uint64_t with_lifecycle(std::uint64_t s, lifecycle l) {
    return (s & ~lifecycle_mask) | lifecycle_bits(l);
}
inline constexpr std::uint32_t refs_of(std::uint64_t s) {
    return static_cast<std::uint32_t>((s & ref_mask) >> ref_shift);
}
inline constexpr std::uint32_t shield_of(std::uint64_t s) {
    return static_cast<std::uint32_t>((s & shield_mask) >> shield_shift);
}
// Cancellation takes effect only when requested and no shield is up (K4).
inline constexpr bool cancel_due(std::uint64_t s) {
    return (s & cancelled) != 0 && shield_of(s) == 0;
}

inline constexpr std::uint32_t max_refs = 0xFFFFFF;
inline constexpr std::uint32_t max_shield = 0xFF;

static_assert(ref_shift + 24 == 64, "ref count occupies the top 24 bits");
static_assert(shield_shift + 8 == ref_shift, "shield depth sits right below the ref count");
static_assert(flags_shift + 8 == shield_shift, "flags sit right below the shield depth");
static_assert(lifecycle_shift + 8 == flags_shift, "lifecycle sits right below the flags");
static_assert((ref_mask & shield_mask) == 0 && (shield_mask & lifecycle_mask) == 0);
static_assert(((notified | cancelled | join_interest | detached | join_waker) &
               (ref_mask | shield_mask | lifecycle_mask)) == 0,
              "flag bits stay inside the flags byte");

}  // namespace state
}  // namespace blitz::detail
