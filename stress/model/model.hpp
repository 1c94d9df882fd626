// SPDX-License-Identifier: MIT
#pragma once
// blitz::model: a stateless model checker for the runtime's lock-free cores (issue 19).
//
// A model is a small program: a body that creates the shared state, starts threads with
// model::thread, and states what must hold with BLITZ_MODEL_CHECK. explore() runs the body
// again and again, each run one execution, until every execution within the bounds has been
// seen or one fails. Threads are cooperative fibers on one OS thread; every operation on a
// model::atomic, every fence, futex wait or wake, mutex operation, yield, spawn and join is a
// scheduling point where the explorer chooses which thread goes next.
//
// What is explored
// - Interleavings, depth first, under a preemption bound (CHESS): switching away from a thread
//   that could have continued costs one preemption; switching when it blocks, yields or ends is
//   free. Bound 2 or 3 finds most concurrency bugs (Musuvathi and Qadeer, PLDI 2007).
// - Weak loads: a load may read any store that C++'s coherence rules allow, not only the
//   latest. Each location keeps its stores in modification order; a load by thread t may read a
//   store s unless a later store to the same location happens-before the load or t has already
//   seen a later one (read-read and write-read coherence). Each choice is a branch the explorer
//   enumerates, the latest store first.
// - Happens-before is tracked with vector clocks: release stores (and release fences before
//   relaxed stores) publish the writer's clock, acquire loads (and acquire fences after relaxed
//   loads) join it, and read-modify-writes continue release sequences.
// - Partial-order reduction with sleep sets (Godefroid 1996): after the branch in which thread
//   p ran first has been explored, the sibling branches keep p asleep until some thread does an
//   operation dependent on p's (same location and one of them writes, the same mutex or futex,
//   or two seq_cst operations). Executions that could only reorder independent operations are
//   cut short and counted as redundant.
//
// - Lifetimes: a model::atomic's destructor retires its location. Any later operation on it
//   fails the execution (a use after free), and so does the destruction itself unless every
//   store to the location happens-before it (the destroying thread must have synchronized
//   with the last writer, or freeing the memory races with that write).
//
// What is not modelled (state it next to any claim a model makes)
// - The modification order of a location is the order stores executed in; behaviours that need
//   a store to be ordered before one that executed earlier are not produced.
// - seq_cst operations and fences synchronize through one global clock, which is stronger than
//   C++ (there they form a total order but give no happens-before of their own): a bug that needs
//   two seq_cst accesses to be unsynchronized is not found.
// - Read-modify-writes, including failed compare-exchanges, read the latest store;
//   compare_exchange_weak never fails spuriously; loads never read from stores that have not
//   executed yet (no out-of-thin-air or load buffering behaviour).
// - Plain (non-atomic) memory is not checked for data races: ThreadSanitizer covers that.
// - Time: a futex wait with a timeout may time out at any scheduling point (the explorer treats
//   the timeout as one more thread it may run), and virtual time (model::now) then jumps to its
//   deadline. Futex wakes create no happens-before (code must not rely on them).
// - Fairness: after a yield or a futex wait a thread's loads read nothing older than the stores
//   that existed then (C++'s "visible in a finite time" made concrete); otherwise a spin loop
//   could read one stale value forever.
// - Sleep sets combined with a preemption bound can skip an execution within the bound whose
//   only equivalent was over it (Coons et al., OOPSLA 2013). With bound -1 (unbounded) the
//   reduction is exact; tests run the small models both ways.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>

namespace blitz::model {

inline constexpr int max_threads = 8;

struct options {
    int preemption_bound = 2;          // -1: unbounded
    bool reduce = true;                // sleep-set partial-order reduction
    std::uint64_t max_executions = 0;  // 0: until the bounded space is exhausted
    std::uint64_t max_steps = 20000;   // per execution; more is reported as a livelock
    std::string replay;                // a schedule printed by a failure: run only that one
    std::string weaken;                // a BLITZ_ORDER site made relaxed (negative controls)
    bool timeouts = true;              // false: timed futex waits never time out, so a wait
                                       // that nobody wakes is reported as a deadlock
};

// The options of a model whose timed waits are a safety net in the runtime: timeouts off, so a
// sleep nobody ends is a deadlock, not a late return.
inline options untimed() {
    options o;
    o.timeouts = false;
    return o;
}

struct report {
    std::uint64_t executions = 0;  // executions run to the end (including redundant ones)
    std::uint64_t redundant = 0;   // executions the sleep sets proved equivalent to earlier ones
    std::uint64_t steps = 0;       // scheduling points in all executions
    std::uint64_t max_depth = 0;   // the longest execution, in scheduling points
    bool exhausted = false;        // every execution within the bounds was seen
    bool failed = false;
    std::string failure;   // what went wrong
    std::string trace;     // the failing execution, one scheduling point per line
    std::string schedule;  // the failing execution's choices: give it to options::replay
    double seconds = 0;
};

// Runs `body` once per execution until the bounded space is exhausted, max_executions is
// reached or an execution fails. Not reentrant; call it from an ordinary thread.
report explore(const options& o, const std::function<void()>& body);

// The one-line summary a model prints: executions, redundant, depth, time, verdict.
std::string summary(const report& r);

// Inside a model. A failed check ends the exploration with the trace of its execution.
void check(bool ok, const char* what, const char* file, int line);
#define BLITZ_MODEL_CHECK(cond) \
    ::blitz::model::check(static_cast<bool>(cond), #cond, __FILE__, __LINE__)

// A spin-wait hint: this thread waits for another to make progress. A yield is a free switch,
// and the yielding thread runs again only when no other thread can.
void yield();
void fence(std::memory_order mo);
// Virtual time: starts at 0 in each execution and moves only when every thread is blocked and
// one of them waits with a timeout.
std::chrono::nanoseconds now();
// Whether the running exploration weakens the BLITZ_ORDER site `site` (options::weaken).
bool weakened(const char* site);

// A model thread. Its constructor is a scheduling point; the destructor requires join().
class thread {
public:
    explicit thread(std::function<void()> fn);
    thread(const thread&) = delete;
    thread& operator=(const thread&) = delete;
    ~thread();
    void join();

private:
    int id_;
    bool joined_ = false;
};

namespace impl {
using bits = std::uint64_t;
// -1 when no exploration is running (the object then behaves as a plain sequential value).
int new_location(bits init, bool is_mutex);
// Numbers the executions: an object made in an earlier execution (a static or thread_local
// first touched there) is plain from then on, outside the model, like one made before explore().
std::uint64_t generation() noexcept;
// Marks a location dead when its object is destroyed: a later operation on it fails the
// execution (a use after free the model would otherwise read as a live value).
void retire(int loc) noexcept;
bits load(int loc, std::memory_order mo);
void store(int loc, bits v, std::memory_order mo);
// Applies `op(old, arg)` atomically; returns the old value.
enum class rmw_op { exchange, add, sub, bit_or, bit_and, bit_xor };
bits rmw(int loc, rmw_op op, bits arg, unsigned width, std::memory_order mo);
bool cas(int loc, bits& expected, bits desired, std::memory_order success,
         std::memory_order failure);
// Futex on a location: blocks while the latest value equals `expected`. Returns false on a
// timeout. `timeout` < 0: no timeout.
bool futex_wait(int loc, bits expected, std::chrono::nanoseconds timeout);
void futex_wake(int loc, int n);
void mutex_lock(int loc);
bool mutex_try_lock(int loc);
void mutex_unlock(int loc);

template <class T>
bits to_bits(T v) noexcept {
    bits b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
T from_bits(bits b) noexcept {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}
}  // namespace impl

// std::atomic's interface (the parts the runtime uses), each operation a scheduling point.
template <class T>
class atomic {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                  "model::atomic holds values of at most 64 bits");

public:
    atomic() noexcept : atomic(T{}) {}
    atomic(T v) noexcept
        : loc_(impl::new_location(impl::to_bits(v), false)), gen_(impl::generation()), plain_(v) {}
    atomic(const atomic&) = delete;
    atomic& operator=(const atomic&) = delete;
    ~atomic() {
        if (modelled()) impl::retire(loc_);
    }

    T load(std::memory_order mo = std::memory_order_seq_cst) const noexcept {
        if (!modelled()) return plain_;
        return impl::from_bits<T>(impl::load(loc_, mo));
    }
    void store(T v, std::memory_order mo = std::memory_order_seq_cst) noexcept {
        if (!modelled()) {
            plain_ = v;
            return;
        }
        impl::store(loc_, impl::to_bits(v), mo);
    }
    operator T() const noexcept { return load(); }
    T operator=(T v) noexcept {
        store(v);
        return v;
    }
    T exchange(T v, std::memory_order mo = std::memory_order_seq_cst) noexcept {
        return apply(impl::rmw_op::exchange, v, mo);
    }
    bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                                 std::memory_order failure) noexcept {
        if (!modelled()) {
            if (std::memcmp(&plain_, &expected, sizeof(T)) == 0) {
                plain_ = desired;
                return true;
            }
            expected = plain_;
            return false;
        }
        impl::bits e = impl::to_bits(expected);
        const bool ok = impl::cas(loc_, e, impl::to_bits(desired), success, failure);
        expected = impl::from_bits<T>(e);
        return ok;
    }
    bool compare_exchange_strong(T& expected, T desired,
                                 std::memory_order mo = std::memory_order_seq_cst) noexcept {
        return compare_exchange_strong(expected, desired, mo, failure_order(mo));
    }
    // Never fails spuriously under the model (see the header comment).
    bool compare_exchange_weak(T& expected, T desired, std::memory_order success,
                               std::memory_order failure) noexcept {
        return compare_exchange_strong(expected, desired, success, failure);
    }
    bool compare_exchange_weak(T& expected, T desired,
                               std::memory_order mo = std::memory_order_seq_cst) noexcept {
        return compare_exchange_strong(expected, desired, mo, failure_order(mo));
    }
    T fetch_add(T v, std::memory_order mo = std::memory_order_seq_cst) noexcept
        requires std::is_integral_v<T>
    {
        return apply(impl::rmw_op::add, v, mo);
    }
    T fetch_sub(T v, std::memory_order mo = std::memory_order_seq_cst) noexcept
        requires std::is_integral_v<T>
    {
        return apply(impl::rmw_op::sub, v, mo);
    }
    T fetch_or(T v, std::memory_order mo = std::memory_order_seq_cst) noexcept
        requires std::is_integral_v<T>
    {
        return apply(impl::rmw_op::bit_or, v, mo);
    }
    T fetch_and(T v, std::memory_order mo = std::memory_order_seq_cst) noexcept
        requires std::is_integral_v<T>
    {
        return apply(impl::rmw_op::bit_and, v, mo);
    }
    T fetch_xor(T v, std::memory_order mo = std::memory_order_seq_cst) noexcept
        requires std::is_integral_v<T>
    {
        return apply(impl::rmw_op::bit_xor, v, mo);
    }
    T operator++() noexcept
        requires std::is_integral_v<T>
    {
        return static_cast<T>(fetch_add(1) + 1);
    }
    T operator--() noexcept
        requires std::is_integral_v<T>
    {
        return static_cast<T>(fetch_sub(1) - 1);
    }
    // C++20's atomic wait and notify, on the model's futex.
    void wait(T old, std::memory_order mo = std::memory_order_seq_cst) const noexcept {
        while (impl::to_bits(load(mo)) == impl::to_bits(old)) {
            if (!modelled()) return;  // plain: nobody else could change it
            impl::futex_wait(loc_, impl::to_bits(old), std::chrono::nanoseconds(-1));
        }
    }
    void notify_one() noexcept {
        if (modelled()) impl::futex_wake(loc_, 1);
    }
    void notify_all() noexcept {
        if (modelled()) impl::futex_wake(loc_, max_threads);
    }
    static constexpr bool is_always_lock_free = true;
    bool is_lock_free() const noexcept { return true; }

    // For the futex shims of the facade: the location, or -1 when the object is not modelled.
    int location() const noexcept { return modelled() ? loc_ : -1; }

private:
    static constexpr std::memory_order failure_order(std::memory_order mo) {
        if (mo == std::memory_order_acq_rel) return std::memory_order_acquire;
        if (mo == std::memory_order_release) return std::memory_order_relaxed;
        return mo;
    }
    T apply(impl::rmw_op op, T v, std::memory_order mo) noexcept {
        if (!modelled()) {
            const T old = plain_;
            plain_ = impl::from_bits<T>(combine(op, impl::to_bits(old), impl::to_bits(v)));
            return old;
        }
        return impl::from_bits<T>(impl::rmw(loc_, op, impl::to_bits(v), sizeof(T), mo));
    }
    static impl::bits combine(impl::rmw_op op, impl::bits a, impl::bits b) noexcept {
        switch (op) {
            case impl::rmw_op::exchange:
                return b;
            case impl::rmw_op::add:
                return a + b;
            case impl::rmw_op::sub:
                return a - b;
            case impl::rmw_op::bit_or:
                return a | b;
            case impl::rmw_op::bit_and:
                return a & b;
            case impl::rmw_op::bit_xor:
                return a ^ b;
        }
        return b;
    }

    bool modelled() const noexcept { return loc_ >= 0 && gen_ == impl::generation(); }

    int loc_;
    std::uint64_t gen_;
    T plain_;
};

// A mutex whose lock and unlock are scheduling points; lock blocks the fiber, not the thread.
// Unlock publishes the holder's clock to the next holder (a mutex is acquire/release).
class mutex {
public:
    mutex() noexcept : loc_(impl::new_location(0, true)), gen_(impl::generation()) {}
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;
    void lock() { impl::mutex_lock(id()); }
    bool try_lock() { return impl::mutex_try_lock(id()); }
    void unlock() { impl::mutex_unlock(id()); }

private:
    int id() const noexcept { return gen_ == impl::generation() ? loc_ : -1; }
    int loc_;
    std::uint64_t gen_;
};

}  // namespace blitz::model
