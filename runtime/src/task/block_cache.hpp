// SPDX-License-Identifier: MIT
#pragma once
// block_cache: the per-thread caches of freed task blocks and the depot they trade batches with.

#include <cstddef>
#include <cstdint>
#include <new>

namespace blitz::detail::blocks {

// Size classes: a block of class c is (c + 1) * step bytes. Classes are 16 bytes apart (the
// heap's own granularity), so a request is never rounded up by more than 15 bytes; requests above
// the largest class go to the heap uncached.
inline constexpr std::size_t step = 16;
inline constexpr std::size_t classes = 64;
constexpr std::size_t class_of(std::size_t bytes) noexcept {
    const std::size_t c = (bytes + step - 1) / step - 1;
    return c < classes ? c : classes;
}
constexpr std::size_t bytes_of(std::size_t c) noexcept { return (c + 1) * step; }

// Off under AddressSanitizer, so that a use after free still faults (blocks then come from the
// heap at their requested size).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool cache_on = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool cache_on = false;
#else
inline constexpr bool cache_on = true;
#endif
#else
inline constexpr bool cache_on = true;
#endif

// Cache shape (block_cache.cpp): a thread keeps, per class, two magazines (the one it allocates
// from and frees to, and a full or empty spare); the depot keeps full magazines for any thread,
// up to depot_bytes. A magazine holds up to 128 blocks and up to magazine_bytes of them, so a
// thread caches no more than 2 * 64 * 16 KiB = 2 MiB, with no byte count kept on the fast path.
inline constexpr std::size_t magazine_bytes = std::size_t{16} << 10;
constexpr std::uint32_t magazine_of(std::size_t c) noexcept {
    const std::size_t n = magazine_bytes / bytes_of(c);
    return static_cast<std::uint32_t>(n > 128 ? 128 : n);
}
inline constexpr std::size_t depot_bytes = std::size_t{8} << 20;

struct free_block {
    free_block* next;       // the next block of its magazine
    free_block* next_full;  // in the depot, on a magazine's first block: the next full magazine
};

// This thread's cache. Constant-initialized and trivially destructible, so the spawn path reaches
// it as a plain thread-local (no initialization check, no wrapper call). Every class's `room`
// starts at 0, so the first block given goes through the slow path, which arms the cache: it
// registers the hook that returns the blocks to the heap when the thread exits (and sets every
// `room` back to 0 so that later frees go to the heap).
struct thread_blocks {
    struct per_class {
        free_block* loaded;  // taken from and given to
        free_block* spare;   // full or empty
        std::uint32_t loaded_n;
        std::uint32_t room;     // blocks the loaded magazine can still take (0 until armed)
        std::uint32_t spare_n;  // 0 or magazine_of(class)
    };
    per_class classes[blocks::classes];
    bool armed;
    bool retired;
};
extern constinit thread_local thread_blocks tl_blocks;

void* take_slow(std::size_t c);
void give_slow(void* p, std::size_t c) noexcept;

// A block of class c (c < classes) from this thread's cache, the depot or the heap.
inline void* take(std::size_t c) {
    thread_blocks::per_class& k = tl_blocks.classes[c];
    if (k.loaded_n == 0) [[unlikely]]
        return take_slow(c);
    free_block* b = k.loaded;
    k.loaded = b->next;
    --k.loaded_n;
    ++k.room;
    return b;
}

// Gives back a block of class c from any thread: to this thread's cache, the depot or the heap.
inline void give(void* p, std::size_t c) noexcept {
    thread_blocks::per_class& k = tl_blocks.classes[c];
    if (k.room == 0) [[unlikely]] {
        give_slow(p, c);
        return;
    }
    k.loaded = ::new (p) free_block{k.loaded, nullptr};
    ++k.loaded_n;
    --k.room;
}

// ---- for tests ----
// Heap allocations take() made on this thread (its cache and the depot had nothing).
std::uint64_t heap_takes_this_thread() noexcept;
// Full magazines the depot holds for class c.
std::size_t depot_magazines(std::size_t c) noexcept;
// Bytes of blocks the depot holds, in all classes.
std::size_t depot_held_bytes() noexcept;
// Returns every magazine the depot holds to the heap.
void drain_depot() noexcept;
// The unit tests' negative control: with the depot off, full magazines go to the heap and empty
// caches allocate from it (the cache as it was before the depot). Default on. Not while other
// threads use the cache (the switch is only a test's).
void set_depot_enabled(bool on) noexcept;

}  // namespace blitz::detail::blocks
