// SPDX-License-Identifier: MIT
#include "alloc_count.hpp"

// Sanitizer runtimes bring their own operator new and delete; under them nothing is counted
// (the counts read 0) and theirs stay.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define BLITZ_ALLOC_HOOK 0
#endif
#endif
#if !defined(BLITZ_ALLOC_HOOK) && (defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__))
#define BLITZ_ALLOC_HOOK 0
#endif
#ifndef BLITZ_ALLOC_HOOK
#define BLITZ_ALLOC_HOOK 1
#endif

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> g_on{false};
std::atomic<std::uint64_t> g_count{0};
std::atomic<std::uint64_t> g_bytes{0};
thread_local std::uint64_t tl_count = 0;

[[maybe_unused]] void* counted(std::size_t n) {
    ++tl_count;
    if (g_on.load(std::memory_order_relaxed)) {
        g_count.fetch_add(1, std::memory_order_relaxed);
        g_bytes.fetch_add(n, std::memory_order_relaxed);
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}

}  // namespace

namespace blitz::bench {

void count_allocations(bool on) noexcept { g_on.store(on, std::memory_order_seq_cst); }
alloc_totals allocations() noexcept {
    return {g_count.load(std::memory_order_relaxed), g_bytes.load(std::memory_order_relaxed)};
}
std::uint64_t allocations_this_thread() noexcept { return tl_count; }

}  // namespace blitz::bench

#if BLITZ_ALLOC_HOOK
void* operator new(std::size_t n) { return counted(n); }
void* operator new[](std::size_t n) { return counted(n); }
// g++ flags free() after a replaced operator new as mismatched; these replacements use malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
#endif
