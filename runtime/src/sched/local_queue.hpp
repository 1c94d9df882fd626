// SPDX-License-Identifier: MIT
#pragma once
// local_queue: a worker's fixed-capacity, single-producer, multi-stealer ring of tasks.

#include <cstdint>
#include <memory>

#include "base/atomic.hpp"
#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

class global_queue;
class task_batch;

// The 256-slot work-stealing ring of one worker (Q1-Q6).
//
// head_ packs two 32-bit indices into one 64-bit word (Q2):
//   bits 63..32  steal head: first slot a thief may still be copying
//   bits 31..0   real head:  next slot to pop or steal
// steal == real means no steal is in progress. tail_ is the owner's next free slot. Indices
// grow without bound and wrap at 2^32; slot = index % 256. Length = tail - real head, and the
// owner may write only while tail - steal head < capacity, so slots a thief is copying are never
// overwritten.
//
// Protocols:
//   push (owner): write slot[tail], publish tail+1. Full ring: if no steal is in progress, claim
//     half (128) by advancing both heads at once and move them plus the new task to the global
//     queue in one push (Q4), as an array (task_batch) from the ring's pool of batches; if a
//     steal is in progress, the new task goes to the global queue alone.
//   pop (owner): CAS the real head forward by one (the steal head follows when no steal runs).
//   steal_into (thief): 1. claim: CAS the real head forward by n = ceil(len / 2) (capped by
//     max_steal and the thief's free space), keeping the steal head; 2. copy the n tasks; the
//     first is returned to run, the others go to the thief's ring; 3. release: CAS the steal
//     head up to the real head. A thief that sees a steal in progress gives up (one steal per
//     victim at a time, Q5).
//
// Invariants: 0 <= tail - steal head <= capacity; every pushed task leaves exactly once (pop,
// steal or overflow; Q6).
// Memory ordering: the owner publishes slots with a release store of tail_; thieves read tail_
// with acquire before reading slots. Head CASes are acq_rel so a claim orders the slot reads that
// follow it and the release orders them before the owner reuses the slots.
// Thread-safety: push, pop, push_batch and len_owner on the owner thread only; steal_into from a
// thief (which owns `dst`); len() from anywhere (approximate).
class local_queue {
public:
#ifdef BLITZ_MODEL_RING_CAPACITY
    // The model checker's build shrinks the ring so that full rings and overflow are reached
    // within a few operations.
    static constexpr std::uint32_t capacity = BLITZ_MODEL_RING_CAPACITY;
#else
    static constexpr std::uint32_t capacity = 256;
#endif
    static constexpr std::uint32_t mask = capacity - 1;
    static_assert((capacity & mask) == 0, "capacity is a power of two");

    // `start` sets the initial indices, so tests can begin near the 2^32 wrap.
    explicit local_queue(std::uint32_t start = 0) noexcept;

    struct push_result {
        std::uint32_t overflowed = 0;  // tasks moved to the global queue by this push
    };
    // `overflow_all` is a deliberate fault (Q4's negative control): a full ring moves all of its
    // tasks to the global queue instead of half.
    push_result push(task_header* t, global_queue& g, bool overflow_all = false) noexcept;
    task_header* pop() noexcept;

    struct steal_result {
        task_header* first = nullptr;  // the task the thief runs now
        std::uint32_t taken = 0;       // tasks claimed, including `first`
        std::uint32_t available = 0;   // victim length seen at claim time
    };
    // Steals from *this into `dst` (the thief's own ring). `steal_all` takes everything instead of
    // half: a deliberate violation of Q5 that the conformance negative control uses.
    steal_result steal_into(local_queue& dst, std::uint32_t max_steal,
                            bool steal_all = false) noexcept;

    // Test hooks that stand for a thief paused between its claim and its release (Q4, Q5):
    // debug_claim takes up to n tasks (returned through `out`, at most n) and leaves the steal
    // in progress; debug_release ends it. Owner or test thread only.
    std::uint32_t debug_claim(std::uint32_t n, task_header** out) noexcept;
    void debug_release() noexcept { release_steal(); }

    // Deliberate bugs for the conformance negative controls. Never set outside a checker.
    struct faults {
        bool full_check_uses_real_head = false;  // Q1: fullness ignores a steal in progress
        bool pop_compares_indices = false;       // Q2: pop orders indices with < (breaks at wrap)
        bool pop_from_tail = false;              // Q3: the owner pops its newest task (no thieves)
        bool steal_claims_one_less = false;      // Q6: a thief copies n tasks but claims n - 1
    };
    void set_faults(faults f) noexcept { faults_ = f; }  // before the ring is shared

    // A racy snapshot, for heuristics and metrics. Inline: the run loop asks at every yield.
    std::uint32_t len() const noexcept {
        // Head first, then tail: tail only grows, so the difference is never negative.
        const std::uint32_t real = real_of(head_.load(std::memory_order_acquire));
        const std::uint32_t tail = tail_.load(std::memory_order_acquire);
        return tail - real < capacity ? tail - real : capacity;
    }
    // Slots in use, counting those a thief is still copying: tail - steal head (Q1: <= 256).
    std::uint32_t span() const noexcept;
    bool empty() const noexcept { return len() == 0; }
    bool steal_in_progress() const noexcept;

    static constexpr std::uint32_t real_of(std::uint64_t h) {
        return static_cast<std::uint32_t>(h);
    }
    static constexpr std::uint32_t steal_of(std::uint64_t h) {
        return static_cast<std::uint32_t>(h >> 32);
    }
    static constexpr std::uint64_t pack(std::uint32_t steal, std::uint32_t real) {
        return (std::uint64_t{steal} << 32) | real;
    }

    ~local_queue();
    // Frees the overflow batches no fetch holds, beyond the few kept (owner; when idle).
    void trim_batches() noexcept;
    std::uint32_t batches() const noexcept { return pool_size_; }  // allocated, for tests

private:
    bool overflow(task_header* t, std::uint32_t head, std::uint32_t n, global_queue& g) noexcept;
    void release_steal() noexcept;
    // The batch to carry an overflow of n tasks: the oldest, if no fetch holds it any more,
    // else a new one. nullptr (the overflow goes as a chain through the headers) when n is above
    // a batch's capacity or the allocation fails.
    task_batch* next_batch(std::uint32_t n) noexcept;
    bool grow_pool() noexcept;

    // The batches, oldest pushed first: pool_[(pool_head_ + i) % pool_cap_] for i < pool_size_.
    // Fetches take each batch's tasks in push order, so the oldest is the first a fetch hands
    // back. The pool grows to the most overflows queued at once (a batch adds 8.7 bytes to each
    // 128-byte task it carries) and trim_batches() cuts it back to batches_kept.
    static constexpr std::uint32_t batches_kept = 8;

    alignas(cache_line) atomic<std::uint64_t> head_;  // consumers: owner pops, thieves claim
    alignas(cache_line) atomic<std::uint32_t> tail_;  // producer: owner only writes
    alignas(cache_line) atomic<task_header*> slots_[capacity];
    faults faults_{};
    std::unique_ptr<task_batch*[]> pool_;
    std::uint32_t pool_cap_ = 0;
    std::uint32_t pool_head_ = 0;
    std::uint32_t pool_size_ = 0;
};

}  // namespace blitz::detail
