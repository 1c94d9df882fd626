// SPDX-License-Identifier: MIT
#pragma once
// timer_driver: the runtime's clock and its timer wheels, one shard per worker (T4-T7, I5).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/timer_slot.hpp"
#include "time/timer_wheel.hpp"

namespace blitz::detail {

// One per runtime: converts instants to 1 ms ticks and keeps the runtime's timers on wheels of
// its shards, one shard per worker (up to max_shards; workers share shards beyond that), each
// under a lock of its own, and fires due timers through their wakers.
//
// Protocol:
//   1. arm(): rounds the deadline up to a tick (never early) and links the slot into the wheel
//      of the calling worker's shard (a thread that is not a worker of this runtime uses a
//      shard picked once per thread); the slot remembers its shard. A deadline the shard's
//      wheel has already passed is refused and the caller proceeds at once.
//   2. disarm(): takes the slot's own shard, wherever the task now runs (a sleeping task that
//      migrated cancels across workers), unlinks a slot that has not fired (from the wheel or
//      the pending list) and drops its waker; false once the waker was taken (that wake is on
//      its way).
//   3. fire_due(): any worker calls it at the start of a tick. It reads every shard's earliest
//      expiry (one load each, no lock) and fires every due shard, its own first, with a try-lock
//      each (a shard being fired or armed elsewhere is left to that thread, or to the next
//      tick): a parked or stuck worker's timers are fired by whichever worker gets there. The
//      wheel moves due entries to the shard's pending list; wakers are taken out in batches of
//      32 under the shard's lock and woken after it is released.
//   4. next_expiry(): when the earliest armed timer of any shard is due (real clock only), what
//      a parking worker's sleep is bounded by. An arm that makes its shard's expiry earlier
//      calls the listener (after the lock is released), so the driver stack can wake a worker
//      whose sleep would end later (I5, T7).
//   5. paused clock: time moves only by advance(), which fires everything due on every shard
//      before returning.
//
// Invariants: a slot is in exactly one of: unarmed, a shard's wheel, that shard's pending list,
// fired; `fired` is set only after its waker was taken; a shard's next_tick is written only under
// its lock and equals its earliest expiry whenever the lock is free (0 while wakers wait in its
// pending list), so the runtime's earliest expiry is the least of the shards' next_tick, with no
// word of its own that arms on different shards would race to lower and firings to raise.
// Memory ordering: fired is stored with release after the waker is taken and loaded with acquire
// by the awaitable's readiness check; the wake itself then orders via the task state word. A
// shard's next_tick is stored and loaded seq_cst: a parking worker publishes its planned wake-up
// and then re-reads every shard's next_tick, while an arm stores its shard's next_tick and then
// reads the planned wake-ups; one of the two sees the other (the store-load pattern needs the
// single total order).
// Thread-safety: every method from any thread. A shard's lock is taken by its own worker's arms
// and cancels, by cancels of tasks that moved and by whoever fires it: lock_waits() counts the
// arms and cancels that found it taken.
class timer_driver {
public:
    using clock = std::chrono::steady_clock;
    using duration = std::chrono::nanoseconds;
    static constexpr duration tick = std::chrono::milliseconds(1);
    // More workers than this share shards (worker i uses shard i % max_shards): a shard's wheel
    // is about 3 KiB and fire_due looks at every shard's expiry when something is due.
    static constexpr unsigned max_shards = 64;

    // Told when an arm moved the earliest expiry earlier (real clock only), with the new one.
    // Called on the arming thread without the driver's lock; must not arm or disarm.
    class earlier_listener {
    public:
        virtual void expiry_moved_earlier(clock::time_point at) noexcept = 0;

    protected:
        ~earlier_listener() = default;
    };

    // Deliberate faults (config::debug) that make deadlines early: `one_tick` (T4's control on the
    // virtual clock) and `half_wait` (T6's on the real clock, where a wake's lateness can hide a
    // tick: a timer fires once half of its wait has passed).
    enum class early_fault : std::uint8_t { none, one_tick, half_wait };
    // `workers`: how many shards to keep (capped at max_shards; at least one).
    explicit timer_driver(bool paused, early_fault early = early_fault::none, unsigned workers = 1);
    timer_driver(const timer_driver&) = delete;
    timer_driver& operator=(const timer_driver&) = delete;
    // Before any timer is armed. `fault_skip` (config::debug, T7's control) never calls it.
    void set_listener(earlier_listener* l, bool fault_skip = false) noexcept {
        listener_ = fault_skip ? nullptr : l;
    }
    // Called by worker `index` of this driver's runtime on its own thread: its arms use its shard.
    void bind_worker(unsigned index) noexcept;
    void unbind_worker() noexcept;  // on the same thread, when it stops being that worker

    clock::time_point now() const noexcept;
    bool paused() const noexcept { return paused_; }

    bool arm(timer_slot& s, clock::time_point deadline, waker w);
    // arm() on a given shard (index % shards()): for tests and models, whose threads are not
    // workers.
    bool arm_on(unsigned shard, timer_slot& s, clock::time_point deadline, waker w);
    bool disarm(timer_slot& s) noexcept;

    // Fires every due timer; returns the number fired. `wait` blocks for each shard's lock
    // instead of leaving a shard another thread is firing.
    std::size_t fire_due(bool wait = false) { return fire_due_from(calling_shard(), wait); }
    // fire_due() starting at a given shard (index % shards()): for tests and models.
    std::size_t fire_due_from(unsigned shard, bool wait = false);
    // The earliest armed timer's due instant; nullopt when none is armed or the clock is paused
    // (virtual time does not pass while a worker sleeps).
    std::optional<clock::time_point> next_expiry() const noexcept;
    void advance(duration d);  // paused clock only
    // Paused clock only: moves it to the earliest armed timer's due instant (if it is later
    // than now) and fires what is due. False, with nothing done, when no timer is armed.
    bool advance_to_next();

    unsigned shards() const noexcept { return shard_count_; }
    std::size_t pending() const;  // armed timers (in the wheels or about to fire)
    std::uint64_t fired_total() const noexcept;
    std::uint64_t cascades() const;
    // Arms and cancels that found their shard's lock taken and waited for it.
    std::uint64_t lock_waits() const noexcept;
    // The earliest expiry in ticks over every shard (UINT64_MAX: none), as fire_due and
    // parking read it.
    std::uint64_t earliest_tick() const noexcept;

private:
    struct alignas(cache_line) shard {
        mutable mutex mu;
        timer_wheel wheel BLITZ_GUARDED_BY(mu);
        timer_entry* pending BLITZ_GUARDED_BY(mu) = nullptr;  // fired by the wheel, waker not taken
        std::size_t pending_count BLITZ_GUARDED_BY(mu) = 0;
        atomic<std::uint64_t> next_tick{UINT64_MAX};  // this shard's earliest (see class comment)
        atomic<std::uint64_t> fired{0};
        atomic<std::uint64_t> lock_waits{0};
    };
    unsigned calling_shard() const noexcept;  // an index below shard_count_
    // arm() on shard `index` (below shard_count_); the waker is moved from only once linked.
    bool arm_shard(unsigned index, timer_slot& s, clock::time_point deadline, waker&& w);
    std::uint64_t deadline_tick(clock::time_point t) const noexcept;
    std::uint64_t now_tick() const noexcept;
    // Locks `sh`, counting a wait when it was taken.
    void lock_counted(shard& sh) noexcept BLITZ_ACQUIRE(sh.mu);
    // Publishes `sh`'s next expiry; returns it.
    std::uint64_t publish_next(shard& sh) noexcept BLITZ_REQUIRES(sh.mu);
    // Fires what is due on `sh` at `now`; returns the count.
    std::size_t fire_shard(shard& sh, std::uint64_t now) BLITZ_REQUIRES(sh.mu);
    // Takes the wakers out in batches and wakes each batch with the lock released.
    std::size_t drain_pending(shard& sh) BLITZ_REQUIRES(sh.mu);
    // A statistic summed over the shards.
    std::uint64_t sum(atomic<std::uint64_t> shard::* counter) const noexcept;
    // `f(shard)` summed over the shards, each read under its lock (f is exempt from the
    // analysis, which does not follow the lock into it).
    template <class F>
    std::uint64_t sum_locked(F f) const {
        std::uint64_t n = 0;
        for (unsigned i = 0; i < shard_count_; ++i) {
            lock_guard l(shards_[i].mu);
            n += f(shards_[i]);
        }
        return n;
    }

    const bool paused_;
    [[maybe_unused]] const early_fault early_;  // read only in the faults build
    const clock::time_point origin_;
    const unsigned shard_count_;
    earlier_listener* listener_ = nullptr;
    atomic<std::int64_t> virtual_offset_ns_{0};  // paused clock: time advanced so far
    std::unique_ptr<shard[]> shards_;
};

}  // namespace blitz::detail
