// SPDX-License-Identifier: MIT
#pragma once
// fast_rng: the per-worker generator used to pick steal victims (Q7).

#include <cstdint>

namespace blitz::detail {

// xorshift64+ in the form Tokio and the reference use: two 32-bit state words, shift triplet
// 17/7/16, output s0 + s1; bounded() maps to [0, n) with Lemire's multiply-shift (no division).
//
// Invariants: the state is never all-zero (a zero seed is replaced).
// Thread-safety: owner thread only.
class fast_rng {
public:
    explicit fast_rng(std::uint64_t seed) noexcept
        : one_(static_cast<std::uint32_t>(seed >> 32)), two_(static_cast<std::uint32_t>(seed)) {
        if (one_ == 0 && two_ == 0) two_ = 1;
    }
    std::uint32_t next() noexcept {
        std::uint32_t s1 = one_;
        const std::uint32_t s0 = two_;
        s1 ^= s1 << 17;
        s1 = s1 ^ s0 ^ (s1 >> 7) ^ (s0 >> 16);
        one_ = s0;
        two_ = s1;
        return s0 + s1;
    }
    // Uniform in [0, n) for n >= 1.
    std::uint32_t bounded(std::uint32_t n) noexcept {
        return static_cast<std::uint32_t>((std::uint64_t{next()} * n) >> 32);
    }

private:
    std::uint32_t one_;
    std::uint32_t two_;
};

// A 64-bit mixer (splitmix64 finalizer) to derive per-worker seeds from one runtime seed.
inline std::uint64_t mix_seed(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace blitz::detail
