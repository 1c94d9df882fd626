// SPDX-License-Identifier: MIT
#pragma once
// A mutex and its locks annotated for clang's thread-safety analysis (-Wthread-safety, an error
// in the clang builds): a field marked BLITZ_GUARDED_BY(mu_) cannot be touched without holding
// mu_, and a function marked BLITZ_REQUIRES(mu_) cannot be called without it. With g++ the
// annotations vanish and these are thin wrappers over std::mutex.

#include <mutex>

#ifdef BLITZ_MODEL_ATOMIC_HEADER
#include BLITZ_MODEL_ATOMIC_HEADER  // defines blitz::detail::mutex_impl (a model mutex)
#else
namespace blitz::detail {
using mutex_impl = std::mutex;
}  // namespace blitz::detail
#endif

#if defined(__clang__)
#define BLITZ_TSA(x) __attribute__((x))
#else
#define BLITZ_TSA(x)
#endif

#define BLITZ_CAPABILITY(x) BLITZ_TSA(capability(x))
#define BLITZ_SCOPED_CAPABILITY BLITZ_TSA(scoped_lockable)
#define BLITZ_GUARDED_BY(x) BLITZ_TSA(guarded_by(x))
#define BLITZ_REQUIRES(...) BLITZ_TSA(requires_capability(__VA_ARGS__))
#define BLITZ_ACQUIRE(...) BLITZ_TSA(acquire_capability(__VA_ARGS__))
#define BLITZ_RELEASE(...) BLITZ_TSA(release_capability(__VA_ARGS__))
#define BLITZ_TRY_ACQUIRE(...) BLITZ_TSA(try_acquire_capability(__VA_ARGS__))
#define BLITZ_EXCLUDES(...) BLITZ_TSA(locks_excluded(__VA_ARGS__))
#define BLITZ_RETURN_CAPABILITY(x) BLITZ_TSA(lock_returned(x))
// For the rare function the analysis cannot follow (a callback run with the lock held); say why.
#define BLITZ_NO_TSA BLITZ_TSA(no_thread_safety_analysis)

namespace blitz::detail {

class BLITZ_CAPABILITY("mutex") mutex {
public:
    void lock() BLITZ_ACQUIRE() { m_.lock(); }
    void unlock() BLITZ_RELEASE() { m_.unlock(); }
    bool try_lock() BLITZ_TRY_ACQUIRE(true) { return m_.try_lock(); }

private:
    mutex_impl m_;
};

// Holds `m` for its scope.
class BLITZ_SCOPED_CAPABILITY lock_guard {
public:
    explicit lock_guard(mutex& m) BLITZ_ACQUIRE(m) : m_(m) { m.lock(); }
    // Takes over `m`, which the caller already holds (after a try_lock).
    lock_guard(mutex& m, std::adopt_lock_t) BLITZ_REQUIRES(m) : m_(m) {}
    ~lock_guard() BLITZ_RELEASE() { m_.unlock(); }
    lock_guard(const lock_guard&) = delete;
    lock_guard& operator=(const lock_guard&) = delete;

private:
    mutex& m_;
};

// Holds `m` for its scope, and can let go of it and take it back in between (a wake batch is
// flushed without the lock).
class BLITZ_SCOPED_CAPABILITY unique_lock {
public:
    explicit unique_lock(mutex& m) BLITZ_ACQUIRE(m) : m_(m) { m.lock(); }
    ~unique_lock() BLITZ_RELEASE() {
        if (owns_) m_.unlock();
    }
    unique_lock(const unique_lock&) = delete;
    unique_lock& operator=(const unique_lock&) = delete;

    void lock() BLITZ_ACQUIRE() {
        m_.lock();
        owns_ = true;
    }
    void unlock() BLITZ_RELEASE() {
        m_.unlock();
        owns_ = false;
    }

private:
    mutex& m_;
    bool owns_ = true;
};

}  // namespace blitz::detail
