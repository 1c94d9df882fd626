// SPDX-License-Identifier: MIT
#pragma once
// Spawn sites by a 16-bit index (issue 46): a task header keeps its spawn site as an index into
// one process-wide table instead of a whole std::source_location, which keeps the header at 96
// bytes (a block class smaller).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <type_traits>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz::detail {

// A std::source_location is one pointer to a constant the compiler makes per call site: that
// address is the site's key.
static_assert(sizeof(std::source_location) == sizeof(const void*) &&
                  std::is_trivially_copyable_v<std::source_location>,
              "a std::source_location must be one pointer for the table of spawn sites");

// site_table: interns keys (addresses, below 2^48) as indices 1..Capacity; index 0 stands for
// no key, and for a key that came after the table filled.
//
// Protocol: index_of(key) probes the hash slots without a lock; a key it does not find is added
// under the mutex, which probes again: the key's reverse entry (sites_) is stored first, then
// its slot, one word holding the key and its index. at(index) reads the reverse entry.
// Invariants: a key has at most one index, for the table's life; an index names one key; a
// slot or a reverse entry, once written, never changes; slots stay at most half full.
// Memory ordering: the slot is stored with release after the reverse entry, and probes load
// slots with acquire, so whoever learned an index from a slot (or from a task header written
// after) finds its reverse entry. Adds are serialized by the mutex; the count is stored with
// release after the slot, so a prober that reads the table full finds every key in it.
// Thread-safety: any thread; index_of may take the mutex; at() is lock-free and
// async-signal-safe (the stall detector's handler reads it).
template <std::uint32_t Capacity>
class site_table {
    static_assert(Capacity >= 1 && Capacity <= 65535, "indices are 16 bits");
    static constexpr std::uint32_t slot_count = std::bit_ceil(2 * Capacity);
    static constexpr int slot_bits = std::countr_zero(slot_count);

public:
    static constexpr std::uint32_t capacity = Capacity;

    // The key's index, added if new; 0 for a null key, an address at or above 2^48, or a new
    // key once the table is full.
    std::uint16_t index_of(const void* key) noexcept {
        const auto k = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
        if (k == 0 || (k >> 48) != 0) return 0;
        const std::uint16_t found = find(k);
        return found != 0 ? found : add(k);
    }

    // The key of `index`; nullptr for 0 or an index not handed out.
    const void* at(std::uint16_t index) const noexcept {
        if (index == 0 || index > Capacity) return nullptr;
        return sites_[index].load(std::memory_order_acquire);
    }

    // Keys added so far.
    std::uint32_t size() const noexcept { return size_.load(std::memory_order_relaxed); }

private:
    static std::uint32_t home(std::uint64_t k) noexcept {
        return static_cast<std::uint32_t>((k * 0x9E3779B97F4A7C15ull) >> (64 - slot_bits));
    }
    static std::uint32_t next(std::uint32_t i) noexcept { return (i + 1) & (slot_count - 1); }

    // The key's index, or 0 when it is not in the table (lock-free).
    std::uint16_t find(std::uint64_t k) const noexcept {
        for (std::uint32_t i = home(k), n = 0; n < slot_count; i = next(i), ++n) {
            const std::uint64_t s = slots_[i].load(std::memory_order_acquire);
            if (s == 0) break;
            if ((s >> 16) == k) return static_cast<std::uint16_t>(s & 0xFFFF);
        }
        return 0;
    }

    std::uint16_t add(std::uint64_t k) noexcept {
        // Full: no add will come, but the one that filled it may have been this key's (after
        // our probe; the model found this): look again, without the lock. acquire: pairs with
        // the count's release below, after the last slot's store.
        if (size_.load(std::memory_order_acquire) == Capacity) return find(k);
        lock_guard g(mu_);
        std::uint32_t i = home(k);
        for (;; i = next(i)) {
            // relaxed: slots change only under the mutex, which we hold
            const std::uint64_t s = slots_[i].load(std::memory_order_relaxed);
            if (s == 0) break;
            if ((s >> 16) == k) return static_cast<std::uint16_t>(s & 0xFFFF);  // added meanwhile
        }
        const std::uint32_t n = size_.load(std::memory_order_relaxed);
        if (n == Capacity) return 0;
        const auto index = static_cast<std::uint16_t>(n + 1);
        sites_[index].store(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(k)),
                            std::memory_order_relaxed);
        slots_[i].store((k << 16) | index, BLITZ_ORDER(site_publish, std::memory_order_release));
        size_.store(n + 1, std::memory_order_release);
        return index;
    }

    atomic<std::uint64_t> slots_[slot_count] = {};
    atomic<const void*> sites_[Capacity + 1] = {};
    atomic<std::uint32_t> size_{0};
    mutex mu_;
};

// The process's table of spawn sites (65,535 of them; later sites are recorded as unknown).
inline constexpr std::uint32_t max_spawn_sites = 65535;

// The calling thread's recent spawn sites and their indices, direct-mapped by the key's
// address: spawns from a few sites in turn (fib's two, a server's accept and timer loops) take
// no look at the table. A zeroed entry (nullptr, 0) agrees with the table: an empty site is 0.
// Two arrays rather than one of pairs: both reads are then one instruction off the thread
// pointer.
inline constexpr unsigned site_cache_size = 8;
inline constinit thread_local const void* tl_site_cache_keys[site_cache_size] = {};
inline constinit thread_local std::uint16_t tl_site_cache_indices[site_cache_size] = {};
inline unsigned site_cache_slot(const void* key) noexcept {
    // The constants a compiler makes for sites are 8-byte aligned and 24 or more bytes apart.
    return (reinterpret_cast<std::uintptr_t>(key) >> 3) % site_cache_size;
}

// clang: the callee keeps the registers (preserve_most), so that a spawn saves none for it.
#if defined(__clang__) && defined(__x86_64__)
[[gnu::noinline, gnu::cold, clang::preserve_most]]
#else
[[gnu::noinline, gnu::cold]]
#endif
std::uint16_t spawn_site_index_slow(const void* key) noexcept;

// The index a task header keeps for `site` (task_header::init_spawned).
inline std::uint16_t spawn_site_index(const std::source_location& site) noexcept {
    const void* key = std::bit_cast<const void*>(site);
    const unsigned slot = site_cache_slot(key);
    if (tl_site_cache_keys[slot] == key) [[likely]]
        return tl_site_cache_indices[slot];
    return spawn_site_index_slow(key);
}

}  // namespace blitz::detail
