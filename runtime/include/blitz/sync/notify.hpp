// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::notify and blitz::barrier (X4).

#include <coroutine>
#include <cstddef>
#include <mutex>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/wait_list.hpp"

namespace blitz {

// Wakes waiting tasks. notify_one() wakes the longest waiter or, when nobody waits, stores one
// permit that the next notified() consumes at once (permits do not accumulate: two
// notify_one() calls with nobody waiting store one). notify_all() wakes every task waiting at
// that moment and stores nothing. No allocation.
class notify {
public:
    notify() = default;
    notify(const notify&) = delete;
    notify& operator=(const notify&) = delete;

    class [[nodiscard]] awaiter : private ::blitz::detail::ready_hook {
    public:
        explicit awaiter(notify& n) noexcept : n_(n), node_(this) {}
        awaiter(const awaiter&) = delete;
        awaiter& operator=(const awaiter&) = delete;
        ~awaiter() { n_.abandon(*this); }
        bool await_ready() noexcept { return n_.take_permit(); }
        bool await_suspend(std::coroutine_handle<> h) {
            detail::task_header* t = detail::suspend_current(h, &ready, this, &describe);
            return n_.enqueue(*this, t);
        }
        void await_resume() noexcept { resumed_ = true; }

    private:
        friend class notify;
        static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
            [[maybe_unused]] const auto* a = static_cast<const awaiter*>(p);
            out.kind = "notify";
            out.object = &a->n_;
        }
        static bool ready(const ::blitz::detail::ready_hook* a) noexcept {
            return static_cast<const awaiter*>(a)->node_.done.load(std::memory_order_acquire);
        }
        notify& n_;
        detail::wait_node node_;
        bool resumed_ = false;
        bool by_one_ = false;  // woken by notify_one (under n_.mu_)
    };

    awaiter notified() noexcept { return awaiter(*this); }
    void notify_one();
    void notify_all();

    unsigned stored_permits() const;  // tests

private:
    // The state word: the stored permits (0 or 1; more only under the fault) above bit 0, which
    // says the waiter list is not empty. Protocol: a notify_one that finds no waiters adds its
    // permit with one CAS, and a notified() takes one with one CAS, neither taking the lock;
    // the waiters bit is set and cleared only under mu_, by the CAS that also checks for a
    // permit (enqueue), so a notify_one either lands its permit before a waiter enqueues (which
    // then takes it and does not suspend) or sees the bit and wakes that waiter under the lock.
    // Invariants: at most one permit is stored (more only under the fault); a notify_one with a
    // task listed wakes exactly one (a woken waiter aborted before it resumed hands it on); the
    // bit is set whenever the list is not empty (it may stay set while notify_all wakes a
    // spliced-off list with the lock dropped).
    // Memory ordering: adding a permit is release and taking one acquire (what the notifier
    // wrote before notify_one is visible to the task its permit lets through); the bit's
    // changes are ordered by mu_. Thread-safety: any thread.
    static constexpr unsigned waiters_bit = 1, permit_unit = 2;
    bool take_permit() noexcept;
    bool add_permit() noexcept;  // false if the waiters bit is set (take the lock instead)
    unsigned with_permit(unsigned s) const noexcept;  // s with a permit stored
    bool enqueue(awaiter& a, detail::task_header* t);
    void abandon(awaiter& a) noexcept;
    void store_permit_locked() noexcept BLITZ_REQUIRES(mu_);
    void waiters_changed_locked() noexcept BLITZ_REQUIRES(mu_);

    mutable detail::mutex mu_;
    detail::wait_queue waiters_;
    detail::atomic<unsigned> state_{0};
#if BLITZ_FAULTS
    friend struct testing::access;
    bool fault_accumulate_ = false;  // X4's control: notify_one with nobody waiting adds a permit
#endif
};

// The result of barrier::wait(): exactly one waiter per generation is the leader.
struct barrier_wait_result {
    bool leader = false;
    bool is_leader() const noexcept { return leader; }
};

// A reusable barrier for n tasks: the n-th arrival releases the generation (and is its leader,
// without suspending); the next n arrivals form the next generation. A waiter aborted before
// its generation completes is taken out of the count. n = 0 is rejected. No allocation.
class barrier {
public:
    explicit barrier(std::size_t n);
    barrier(const barrier&) = delete;
    barrier& operator=(const barrier&) = delete;

    class [[nodiscard]] awaiter : private ::blitz::detail::ready_hook {
    public:
        explicit awaiter(barrier& b) noexcept : b_(b), node_(this) {}
        awaiter(const awaiter&) = delete;
        awaiter& operator=(const awaiter&) = delete;
        ~awaiter() {
            // Never arrived, or released (the barrier no longer touches the node): nothing to
            // take back, no lock.
            if (arrived_ && !node_.done.load(std::memory_order_acquire)) b_.abandon(*this);
        }
        // A barrier of one party: every arrival leads its own generation at once, with one
        // atomic increment and no lock (nobody else is ever in its generation).
        bool await_ready() noexcept {
            if (b_.n_ != 1) return false;
            // relaxed: the count is all that is shared; a one-party barrier orders nothing
            generation_ = b_.generation_.fetch_add(1, std::memory_order_relaxed);
            leader_ = true;
            return true;
        }
        bool await_suspend(std::coroutine_handle<> h) {
            detail::task_header* t = detail::suspend_current(h, &ready, this, &describe);
            arrived_ = true;
            return b_.arrive(*this, t);
        }
        barrier_wait_result await_resume() noexcept { return barrier_wait_result{leader_}; }

    private:
        friend class barrier;
        static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
            [[maybe_unused]] const auto* a = static_cast<const awaiter*>(p);
            out.kind = "barrier";
            out.object = &a->b_;
        }
        static bool ready(const ::blitz::detail::ready_hook* a) noexcept {
            return static_cast<const awaiter*>(a)->node_.done.load(std::memory_order_acquire);
        }
        barrier& b_;
        detail::wait_node node_;
        bool leader_ = false;
        bool arrived_ = false;        // counted in a generation (await_suspend ran)
        std::size_t generation_ = 0;  // the generation it arrived in
    };

    awaiter wait() noexcept { return awaiter(*this); }
    std::size_t parties() const noexcept { return n_; }
    std::size_t generation() const;

private:
    bool arrive(awaiter& a, detail::task_header* t);
    void abandon(awaiter& a) noexcept;

    const std::size_t n_;
    detail::mutex mu_;
    detail::wait_queue waiters_;
    std::size_t arrived_ BLITZ_GUARDED_BY(mu_) = 0;  // in the current generation
    // Raised under mu_ with more than one party; by a lock-free increment with one (the two
    // never mix: the party count is fixed). Read without the lock by generation().
    detail::atomic<std::size_t> generation_{0};
#if BLITZ_FAULTS
    friend struct testing::access;
    bool fault_all_lead_ = false;  // X4's control: every arrival of a generation is told it leads
#endif
};

}  // namespace blitz
