// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::semaphore: a counting, FIFO, async semaphore (X2), and the RAII permit it hands out.

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/inspect.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/wait_list.hpp"
#if BLITZ_FAULTS
#include "blitz/detail/atomic.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/testing/runtime_faults.hpp"
#endif

namespace blitz {

class semaphore;

// Permits held by their owner; destroying it (or release()) gives them back. Move-only.
class [[nodiscard]] semaphore_permit {
public:
    semaphore_permit() noexcept = default;
    semaphore_permit(semaphore* s, std::size_t n) noexcept : s_(s), n_(n) {}
    semaphore_permit(semaphore_permit&& o) noexcept
        : s_(std::exchange(o.s_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    semaphore_permit& operator=(semaphore_permit&& o) noexcept {
        if (this != &o) {
            release();
            s_ = std::exchange(o.s_, nullptr);
            n_ = std::exchange(o.n_, 0);
        }
        return *this;
    }
    ~semaphore_permit() { release(); }

    std::size_t count() const noexcept { return n_; }
    semaphore* owner() const noexcept { return s_; }  // nullptr when it holds nothing
    // Gives the permits back now.
    void release() noexcept;
    // Keeps the permits out of the semaphore for good (e.g. to shrink it).
    void forget() noexcept {
        s_ = nullptr;
        n_ = 0;
    }

private:
    semaphore* s_ = nullptr;
    std::size_t n_ = 0;
};

// A counting semaphore for tasks.
//
// 1. acquire(n): free permits are taken at once (lock-free) when nobody is queued; otherwise
//    the task queues at the back and waits. Queued waiters are served strictly in order: a
//    release hands permits straight to the front waiter (a partial grant if it needs more than
//    there are) and only what is left over goes back to the counter.
// 2. A waiter destroyed before it got everything (its task aborted, a select dropped it) leaves
//    the queue and gives its partial grant to the next waiters; one destroyed after being
//    granted but before resuming gives back the whole grant.
//
// Invariants (X2): the free count is 0 whenever a waiter is queued; free + held + granted ==
// the permits put in; the free count never exceeds max_permits().
// Thread-safety: all members from any thread; acquire only inside a task. No allocation.
class semaphore {
public:
    static constexpr std::size_t default_max = std::size_t{1} << 60;

    // Throws std::invalid_argument when permits > max.
    explicit semaphore(std::size_t permits, std::size_t max = default_max);
    // A semaphore whose word also counts tickets: 32-bit numbers, handed out in order, one with
    // each permit taken by try_acquire_ticket() and one to each take_ticket() call. A bounded
    // channel numbers its slots this way, so a send that finds a free slot learns its position
    // in the same compare-exchange. max must be below 2^31 (std::invalid_argument otherwise).
    struct with_tickets_t {};
    static constexpr with_tickets_t with_tickets{};
    static constexpr std::size_t max_with_tickets = (std::size_t{1} << 31) - 1;
    // The first ticket handed out is `first_ticket` (tests start near the wrap-around).
    semaphore(std::size_t permits, std::size_t max, with_tickets_t, std::uint32_t first_ticket = 0);
    semaphore(const semaphore&) = delete;
    semaphore& operator=(const semaphore&) = delete;
    ~semaphore() = default;

    class [[nodiscard]] acquire_awaiter : private ::blitz::detail::ready_hook {
    public:
        acquire_awaiter(semaphore& s, std::size_t n) noexcept : s_(s), n_(n), node_(this) {}
        acquire_awaiter(const acquire_awaiter&) = delete;
        acquire_awaiter& operator=(const acquire_awaiter&) = delete;
        ~acquire_awaiter() {
            // Never suspended and holding nothing: nothing to give back (a select's loser).
            if (!resumed_ && (task_ || held_)) s_.abandon(*this);
        }

        bool await_ready() noexcept {
            if (detail::coop_exhausted()) {  // B2: yield before taking anything more
                coop_yield_ = true;
                return false;
            }
            if (take_free()) return true;
            // acquire: pairs with close(); what was released before it is visible now
            if (!s_.closed_.load(std::memory_order_acquire)) return false;
            // Closed: permits released before the close may have landed after the failed take,
            // and a grant outstanding to a waiter may still come back (it is abandoned): only
            // when neither holds is the semaphore finished for this request.
            if (take_free()) return true;
            if (s_.grants_outstanding()) return false;  // wait in the queue for it
            closed_ = true;
            return true;
        }
        bool await_suspend(std::coroutine_handle<> h) {
            task_ = detail::suspend_current(h, &ready, this, &describe);
            if (coop_yield_) {
                detail::mark_yielded(task_);  // back of the ring; the acquire runs on return
                return true;
            }
            return s_.enqueue(*this, task_);
        }
        // A closed semaphore that could not grant the request gives an empty permit.
        semaphore_permit await_resume() noexcept {
            resumed_ = true;
            if (queue_granted_) s_.grant_taken();
            if (closed_) return semaphore_permit();
            return semaphore_permit(&s_, n_);
        }
        bool closed() const noexcept { return closed_; }
        // What the task dump calls this wait ("channel recv", "mutex lock"; a static string)
        // and the primitive it names (nullptr: this semaphore); `facts`, when given, adds what
        // the lost-task analysis may rely on (wait_point::provable) from that primitive.
        using facts_fn = void (*)(const void* object, wait_point& out);
        void set_label(const char* what, const void* object = nullptr,
                       facts_fn facts = nullptr) noexcept {
            label_ = what;
            object_ = object;
            facts_ = facts;
        }

    private:
        friend class semaphore;
        static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
            const auto* a = static_cast<const acquire_awaiter*>(p);
            out.kind = a->label_;
            out.object = a->object_ ? a->object_ : &a->s_;
            if (a->n_ != 1) out.detail = std::to_string(a->n_) + " permits";
            if (a->facts_) {
                a->facts_(out.object, out);
            } else if (const void* g = a->s_.holder_at()) {
                // A mutex's guard: only its release (or its task's end) lets this wait go on.
                out.provable = true;
                out.ended_by_handles.push_back(g);
            }
        }
        // Takes all n permits from the free count at once, or nothing.
        bool take_free() noexcept {
            if (!s_.try_take(n_)) return false;
            held_ = n_;
            detail::coop_spend();
            return true;
        }
        static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
            auto* a = const_cast<acquire_awaiter*>(static_cast<const acquire_awaiter*>(p));
            if (a->coop_yield_) {
                // Back from a budget yield: acquire now (queueing if need be) before resuming.
                a->coop_yield_ = false;
                return !a->s_.enqueue(*a, a->task_);
            }
            return a->node_.done.load(std::memory_order_acquire);
        }
        semaphore& s_;
        const std::size_t n_;
        std::size_t held_ = 0;        // granted so far; under s_.mu_ while queued
        bool resumed_ = false;        // the permits went to a semaphore_permit
        bool closed_ = false;         // failed because the semaphore was closed (set under s_.mu_)
        bool coop_yield_ = false;     // out of budget: yield, then acquire
        bool queue_granted_ = false;  // completed in the queue (counted in granted_waiting_)
        detail::task_header* task_ = nullptr;
        detail::wait_node node_;
        const char* label_ = "semaphore acquire";
        const void* object_ = nullptr;
        facts_fn facts_ = nullptr;
    };

    // co_await sem.acquire(n) -> semaphore_permit. n = 0 completes at once; n > max throws
    // std::invalid_argument (it could never be granted).
    acquire_awaiter acquire(std::size_t n = 1) {
        if (n > max_) throw_never_granted(n);
        return acquire_awaiter(*this, n);
    }
    // Takes n permits only if they are free and nobody is queued.
    // (Inline: the channels' try_send and try_recv take their permits here.)
    std::optional<semaphore_permit> try_acquire(std::size_t n = 1) noexcept {
        if (n > max_) return std::nullopt;
        // The free count is 0 while anyone is queued, so this cannot overtake a waiter.
        if (!try_take(n)) return std::nullopt;
        return semaphore_permit(this, n);
    }
    // A semaphore made with_tickets: takes one permit only if it is free and nobody is queued,
    // and with it the next ticket (written to `ticket`), in one atomic step.
    bool try_acquire_ticket(std::uint32_t& ticket) noexcept {
        if (BLITZ_MODEL_DEFECT(ticket_read_apart)) {  // the model's control: two steps
            const std::uint32_t t = next_ticket();
            if (!try_take(1)) return false;
            permits_.fetch_add(ticket_one, std::memory_order_relaxed);
            ticket = t;
            return true;
        }
        std::size_t before;
        if (!try_take(1, ticket_one, &before)) return false;
        ticket = static_cast<std::uint32_t>(before >> ticket_shift);
        return true;
    }
    // A semaphore made with_tickets: the next ticket, for a permit acquired another way.
    std::uint32_t take_ticket() noexcept {
        // relaxed: the permit this goes with was ordered when it was taken
        return static_cast<std::uint32_t>(
            permits_.fetch_add(ticket_one, std::memory_order_relaxed) >> ticket_shift);
    }
    // The ticket the next taker gets (a snapshot; for a channel's destructor and tests).
    std::uint32_t next_ticket() const noexcept {
        return static_cast<std::uint32_t>(permits_.load(std::memory_order_acquire) >> ticket_shift);
    }
    // Adds n permits: to the queued waiters first, in order, then to the free count. Throws
    // std::overflow_error if the free count would exceed max_permits().
    void release(std::size_t n = 1) {
        // Lock-free while nobody is queued: the queued flag is in the same word, so a release
        // either lands before a waiter queues (which then takes the permits) or sees the flag.
        std::size_t cur = permits_.load(std::memory_order_relaxed);
        while (n != 0 && !(cur & queued_bit) && n <= max_ - count_of(cur)) {
            // release: pairs with try_take's acquire (what the holder did happens before)
            if (permits_.compare_exchange_weak(cur, cur + (n << 1), std::memory_order_release,
                                               std::memory_order_relaxed)) {
                return;
            }
        }
        release_slow(n);
    }

    std::size_t available() const noexcept {
        return count_of(permits_.load(std::memory_order_acquire));
    }
    // Closes the semaphore: queued waiters complete with an empty permit (their partial grants
    // go back to the free count), and later acquires that cannot be served from free permits
    // complete the same way at once. Free permits can still be taken (channels drain this way).
    // While a grant is outstanding (a waiter was granted its permits but has not resumed), the
    // queue waits instead: if that waiter is abandoned its permits go to the next one, and once
    // no grant is outstanding the remaining waiters complete empty. So a channel built on this
    // never reports its end while a value can still come back to it.
    void close();
    bool is_closed() const noexcept { return closed_.load(std::memory_order_acquire); }
    // Closed, nothing free, and no grant outstanding that could come back.
    bool is_closed_and_drained() const noexcept {
        // acquire: pairs with close(); every release before it is then visible
        return closed_.load(std::memory_order_acquire) && available() == 0 && !grants_outstanding();
    }
    bool grants_outstanding() const noexcept {
        return granted_waiting_.load(std::memory_order_seq_cst) != 0;
    }
    std::size_t max_permits() const noexcept { return max_; }
    // Where the guard holding a one-permit semaphore (a blitz::mutex) lives, for the lost-task
    // analysis: its guard records its address when it takes the permit or moves, and clears it
    // when it lets go (nullptr: not held by a guard). A semaphore of more permits ignores it.
    void note_holder(const void* where) noexcept {
        if (detail::inspect_enabled && max_ == 1)
            holder_at_.store(where, std::memory_order_release);
    }
    const void* holder_at() const noexcept { return holder_at_.load(std::memory_order_acquire); }
    // Waiters queued right now (a snapshot, for tests and metrics).
    std::size_t waiters() const;

private:
    // permits_ holds (free count << 1) | queued_bit, and, made with_tickets, the next ticket in
    // its top 32 bits (the count then fits in bits 1-31, as max < 2^31). The bit is set, under
    // mu_, exactly while the wait queue is non-empty, and then the free count is 0 (X2); every
    // change to the word while it is set happens under mu_. Permits are added and taken by
    // adding and subtracting (count << 1), which leaves the ticket alone.
    static constexpr std::size_t queued_bit = 1;
    semaphore(std::size_t permits, std::size_t max, std::size_t count_mask,
              std::size_t ticket_bits);
    static constexpr unsigned ticket_shift = 32;
    static constexpr std::size_t ticket_one = std::size_t{1} << ticket_shift;
    std::size_t count_of(std::size_t word) const noexcept { return (word & count_mask_) >> 1; }
    [[noreturn]] void throw_never_granted(std::size_t n) const;
    void release_slow(std::size_t n);
    // Under mu_: clears the queued bit if the queue is empty, then adds n free permits.
    void settle_locked(std::size_t n) noexcept;
    // Takes n free permits when nobody is queued, adding `ticket` (0 or ticket_one) to the word
    // in the same step; `before`, if given, receives the word it changed.
    bool try_take(std::size_t n, std::size_t ticket = 0, std::size_t* before = nullptr) noexcept {
        std::size_t cur = permits_.load(std::memory_order_acquire);
        // With the queued bit set the free count is 0 (or, under the float_permits control,
        // must not be taken past the queue).
        while (!(cur & queued_bit) && count_of(cur) >= n) {
            // acq_rel: taking permits orders what the releaser did before releasing them
            if (permits_.compare_exchange_weak(cur, cur - (n << 1) + ticket,
                                               std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
                if (before) *before = cur;
                return true;
            }
        }
        return false;
    }
    bool enqueue(acquire_awaiter& a, detail::task_header* t) noexcept;
    void abandon(acquire_awaiter& a) noexcept;
    // A waiter granted in the queue resumed: one grant fewer outstanding.
    void grant_taken() noexcept;
    // One grant fewer outstanding; true if it was the last and the semaphore is closed (the
    // queue's waiters are then to be completed empty).
    bool last_grant_gone() noexcept;
    // Under mu_, once closed with no grant outstanding: completes every queued waiter empty.
    void close_waiters_locked(detail::wake_batch& b) noexcept BLITZ_REQUIRES(mu_);
    // Hands n permits to waiters in order, the rest to the free count. Under mu_; flushes the
    // batch (unlocking and relocking) when it fills.
    void give_locked(std::size_t n, detail::wake_batch& b) noexcept BLITZ_REQUIRES(mu_);
    detail::wait_node* next_waiter() noexcept;

    detail::atomic<std::size_t> permits_;
    const std::size_t count_mask_;  // the count's bits of permits_
    detail::atomic<bool> closed_{false};
    // Waiters completed in the queue that have not yet resumed or been abandoned. Raised under
    // mu_; lowered by the resuming waiter without it. seq_cst with closed_: close() stores
    // closed_ then reads this, a resuming waiter lowers this then reads closed_, so at least one
    // of them sees the other and completes the queue.
    detail::atomic<std::size_t> granted_waiting_{0};
    const std::size_t max_;
    detail::atomic<const void*> holder_at_{nullptr};  // note_holder
    mutable detail::mutex mu_;
    detail::wait_queue waiters_;  // acquire_awaiter::node_, oldest first
    std::size_t queued_ BLITZ_GUARDED_BY(mu_) = 0;
#if BLITZ_FAULTS
    friend struct testing::access;
    testing::semaphore_faults faults_;  // X2 and X5's controls (blitz/testing.hpp)
#endif
};

inline void semaphore_permit::release() noexcept {
    if (s_ && n_) std::exchange(s_, nullptr)->release(std::exchange(n_, 0));
    s_ = nullptr;
    n_ = 0;
}

}  // namespace blitz
