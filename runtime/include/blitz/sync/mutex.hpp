// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::mutex and blitz::rwlock: async locks for tasks, built on the FIFO semaphore (X3).

#include <optional>
#include <utility>

#include "blitz/sync/semaphore.hpp"

namespace blitz {

// Holds a lock until destroyed (or unlock()). Move-only.
template <class Lock>
class [[nodiscard]] basic_guard {
public:
    basic_guard() noexcept = default;
    explicit basic_guard(semaphore_permit p) noexcept : p_(std::move(p)) { note(this); }
    basic_guard(basic_guard&& o) noexcept : p_(std::move(o.p_)) { note(this); }
    basic_guard& operator=(basic_guard&& o) noexcept {
        if (this != &o) {
            unlock();
            p_ = std::move(o.p_);
            note(this);
        }
        return *this;
    }
    ~basic_guard() { unlock(); }
    void unlock() noexcept {
        note(nullptr);
        p_.release();
    }
    bool owns_lock() const noexcept { return p_.count() > 0; }

private:
    // A mutex's guard says where it lives (semaphore::note_holder; the lost-task analysis).
    void note(const void* where) noexcept {
        if (semaphore* s = p_.owner()) s->note_holder(where);
    }
    semaphore_permit p_;
};

// Wraps a semaphore acquire so that co_await yields a guard instead of a permit.
template <class Guard>
class [[nodiscard]] guard_awaiter {
public:
    guard_awaiter(semaphore& s, std::size_t n, const char* what) : a_(s.acquire(n)) {
        a_.set_label(what);
    }
    bool await_ready() noexcept { return a_.await_ready(); }
    bool await_suspend(std::coroutine_handle<> h) { return a_.await_suspend(h); }
    Guard await_resume() noexcept { return Guard(a_.await_resume()); }

private:
    semaphore::acquire_awaiter a_;
};

// A mutual-exclusion lock for tasks: `auto g = co_await m.lock();` holds it until g goes.
// FIFO: the lock passes straight to the longest waiter on unlock, so nobody starves. A task
// aborted while waiting leaves the queue. Not recursive: locking twice from one task waits
// forever. No allocation.
class mutex {
public:
    struct tag;
    using guard = basic_guard<tag>;

    mutex() : sem_(1, 1) {}
    guard_awaiter<guard> lock() { return guard_awaiter<guard>(sem_, 1, "mutex lock"); }
    std::optional<guard> try_lock() noexcept {
        if (auto p = sem_.try_acquire(1)) return guard(std::move(*p));
        return std::nullopt;
    }
    bool is_locked() const noexcept { return sem_.available() == 0; }
    semaphore& raw() noexcept { return sem_; }  // tests and controls

private:
    semaphore sem_;
};
using mutex_guard = mutex::guard;

// Many readers or one writer. Readers take one permit of max_readers, a writer takes them all;
// because the semaphore is FIFO, a queued writer blocks readers that arrive after it, so
// writers do not starve.
class rwlock {
public:
    static constexpr std::size_t max_readers = std::size_t{1} << 30;
    struct read_tag;
    struct write_tag;
    using read_guard = basic_guard<read_tag>;
    using write_guard = basic_guard<write_tag>;

    rwlock() : sem_(max_readers, max_readers) {}
    guard_awaiter<read_guard> read() { return guard_awaiter<read_guard>(sem_, 1, "rwlock read"); }
    guard_awaiter<write_guard> write() {
        return guard_awaiter<write_guard>(sem_, max_readers, "rwlock write");
    }
    std::optional<read_guard> try_read() noexcept {
        if (auto p = sem_.try_acquire(1)) return read_guard(std::move(*p));
        return std::nullopt;
    }
    std::optional<write_guard> try_write() noexcept {
        if (auto p = sem_.try_acquire(max_readers)) return write_guard(std::move(*p));
        return std::nullopt;
    }
    semaphore& raw() noexcept { return sem_; }

private:
    semaphore sem_;
};

}  // namespace blitz
