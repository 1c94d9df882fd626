// SPDX-License-Identifier: MIT
#pragma once
// global_queue: the runtime-wide injection queue for tasks scheduled from outside a worker.

#include <cstdint>

#include "base/atomic.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

// A run of tasks pushed as one array: a full ring's overflow (Q4). It is linked into the global
// queue by a header of its own, so a fetch copies pointers out of it instead of following links
// through the tasks' headers, one cache miss after another (that chase was nearly all of
// pop_share's time, 9-12% of skynet_1m and spawn_many_local).
// Its producer (a ring's owner) owns it: it fills it only while reusable(), pushes it, and may
// fill it again once a fetch has taken its last task. A fetch that takes part of it keeps the
// rest at the front of the queue (global_queue::batch_), so the order stays FIFO.
// Memory ordering: the push's release store of the link publishes the items; the fetch that
// takes the last task clears `queued_` with release after its last read of the batch, and the
// producer reads it with acquire before writing the batch again.
class task_batch {
public:
    static constexpr std::uint32_t capacity = 129;  // half a ring and the task that overflowed it

    task_batch() noexcept = default;
    task_batch(const task_batch&) = delete;
    task_batch& operator=(const task_batch&) = delete;

    // No fetch still reads it: its producer may fill and push it.
    bool reusable() const noexcept {
        return !queued_.load(std::memory_order_acquire);  // acquire: pairs with the fetch's release
    }
    // Producer: write the tasks to items(), then say how many (n <= capacity), then push_array.
    task_header** items() noexcept { return items_; }
    void carry(std::uint32_t n) noexcept { count_ = n; }

private:
    friend class global_queue;
    task_header link_;  // the queue's node (flag_queue_batch)
    atomic<bool> queued_{false};
    std::uint32_t count_ = 0;  // tasks carried
    std::uint32_t taken_ = 0;  // tasks fetched so far (under the consumers' lock)
    task_header* items_[capacity];
};

// An intrusive FIFO of tasks (linked through task_header::queue_next_) whose producers take no
// lock, with an atomic length so emptiness checks take no lock either (G1, amended by issue 21).
//
// Producers (any thread) append a chain with one exchange on the tail and one store of the
// link from the previous tail: a spawn from a plain thread never waits for a worker that is
// fetching, and never sleeps on a contended mutex. Consumers (workers fetching a share) take
// the consumer lock, so one fetch is one acquisition whatever its size (G2), and walk from the
// head. A stub node sits in the list whenever it would otherwise be empty, so the head and the
// tail never have to be updated together (Vyukov's intrusive MPSC queue, with consumers
// serialized by the lock).
//
// The one window: a producer that exchanged the tail but has not yet stored its link. Nodes
// behind it are unreachable until it does; a fetch then returns fewer tasks than len(), possibly
// none ("a push in flight"). The length is raised before the exchange, so len() never
// undercounts reachable tasks, and a worker that finds the queue non-empty does not park (the
// parking protocol's final check), so it looks again once the link lands.
//
// Invariants: len_ >= the number of reachable tasks (equal when no push is in flight); every
// pushed task is fetched exactly once, in push order (per producer, and across producers in
// the order of their exchanges); a consumer never reads a node after handing it out.
// Memory ordering: a push publishes its chain with the release store of the link; consumers
// read links with acquire. len_ is raised with seq_cst before the exchange and read with
// seq_cst by the parking protocol's final check, so a producer's push and a parking worker's
// bitmap update cannot both miss each other (see idle_state).
// Thread-safety: every method from any thread.
class global_queue {
public:
    global_queue() noexcept;
    global_queue(const global_queue&) = delete;
    global_queue& operator=(const global_queue&) = delete;

    void push(task_header* t) noexcept { push_batch(t, t, 1); }
    // Appends the chain first..last (linked by queue_next_, `n` tasks) with one exchange.
    void push_batch(task_header* first, task_header* last, std::uint32_t n) noexcept;
    // Appends the tasks `b` carries (filled, reusable) with one exchange; `b` is the queue's
    // until a fetch has taken them all (b->reusable()).
    void push_array(task_batch* b) noexcept;

    // Takes a fair share for one of `workers` workers: n = min(len, clamp(len / workers, lo, hi)),
    // but never more than `room` (fewer while a push is in flight); writes them to `out` in FIFO
    // order and returns n (G2). `len_seen`, if given, receives the length it saw.
    std::uint32_t pop_share(task_header** out, std::uint32_t room, unsigned workers,
                            std::uint32_t lo, std::uint32_t hi,
                            std::uint64_t* len_seen = nullptr) noexcept;
    // Takes one task (used at shutdown and by tests); nullptr when empty.
    task_header* pop() noexcept;

    std::uint64_t len() const noexcept { return len_.load(std::memory_order_seq_cst); }
    bool empty() const noexcept {
        if (BLITZ_FAULT(fault_locked_empty_)) [[unlikely]]
            return locked_empty();
        return len() == 0;
    }
    // G1's negative controls (set before the queue is shared): emptiness checks take the
    // consumer lock; pushes take it.
    void set_fault_locked_empty(bool on) noexcept { fault_locked_empty_ = on; }
    void set_fault_locked_push(bool on) noexcept { fault_locked_push_ = on; }
    // Consumer-lock acquisitions so far (fetches, and the controls' locked checks and pushes).
    std::uint64_t lock_acquisitions() const noexcept {
        return locks_.load(std::memory_order_relaxed);  // relaxed: a statistic
    }
#if BLITZ_FAULTS
    // Pushes so far (one per push_batch, whatever its length: Q4's one operation per overflow).
    // Counted in the faults build only, where the tests run: not a cost of every release push.
    std::uint64_t push_operations() const noexcept {
        return pushes_.load(std::memory_order_relaxed);  // relaxed: a statistic
    }
#endif

private:
    void count_lock() const noexcept BLITZ_REQUIRES(mu_);
    bool locked_empty() const noexcept;
    // The oldest reachable task; nullptr when empty or behind a push in flight.
    task_header* take_one() noexcept BLITZ_REQUIRES(mu_);
    // Copies up to `room` of batch_'s tasks to `out`; hands batch_ back once it is empty.
    std::uint32_t take_from_batch(task_header** out, std::uint32_t room) noexcept
        BLITZ_REQUIRES(mu_);
    void append(task_header* first, task_header* last) noexcept;
    static void yield_cpu() noexcept;

#ifdef BLITZ_MODEL_ATOMIC_HEADER
    static constexpr unsigned link_wait_spins = 1;  // each pause is a scheduling point there
    static constexpr unsigned link_wait_yields = 0;
#else
    static constexpr unsigned link_wait_spins = 64;  // pauses a fetch waits for a link
    // Then CPU yields, with the consumers' lock held: the producer in its window was most likely
    // preempted (many workers on few CPUs), and the other consumers sleep on the lock instead of
    // spinning against it (at 256 workers on two CPUs, one injected task cost 9,364 locked
    // fetch attempts before this).
    static constexpr unsigned link_wait_yields = 16;
#endif
    mutable mutex mu_;                         // the consumers' lock
    task_header* head_ BLITZ_GUARDED_BY(mu_);  // the oldest node (possibly the stub)
    // A batch taken off the list with tasks left in it: they are the oldest in the queue.
    task_batch* batch_ BLITZ_GUARDED_BY(mu_) = nullptr;
    task_header stub_;
    alignas(cache_line) atomic<task_header*> tail_;  // the newest node; producers exchange it
#if BLITZ_FAULTS
    atomic<std::uint64_t> pushes_{0};
#endif
    alignas(cache_line) atomic<std::uint64_t> len_{0};
    mutable atomic<std::uint64_t> locks_{0};
    bool fault_locked_empty_ = false;
    bool fault_locked_push_ = false;
};

}  // namespace blitz::detail
