#include "blitz/sync/semaphore.hpp"

#include <stdexcept>
#include <string>

namespace blitz {
semaphore::semaphore(std::size_t permits, std::size_t max) : permits_(permits), max_(max) {
    if (permits > max) {
        throw std::invalid_argument("blitz::semaphore: " + std::to_string(permits) +
                                    " initial permits exceed the maximum of " + std::to_string(max));
    }
}

semaphore::acquire_awaiter semaphore::acquire(std::size_t n) {
    if (n > max_) {
        throw std::invalid_argument("blitz::semaphore::acquire: " + std::to_string(n) +
                                    " permits can never be granted (maximum " +
                                    std::to_string(max_) + ")");
    }
    return acquire_awaiter(*this, n);
}

bool semaphore::try_take(std::size_t n) noexcept {
    std::size_t cur = permits_.load(std::memory_order_acquire);
    while (cur >= n) {
        // acq_rel: taking permits orders what the releaser did before releasing them
        if (permits_.compare_exchange_weak(cur, cur - n, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
            return true;
        }
    }
    return false;
}

std::size_t semaphore::drain(std::size_t n) noexcept {
    std::size_t cur = permits_.load(std::memory_order_acquire);
    for (;;) {
        const std::size_t take = cur < n ? cur : n;
        if (take == 0) return 0;
        if (permits_.compare_exchange_weak(cur, cur - take, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
            return take;
        }
    }
}

std::optional<semaphore_permit> semaphore::try_acquire(std::size_t n) noexcept {
    if (n > max_) return std::nullopt;
    // The free count is 0 while anyone is queued, so this cannot overtake a waiter.
    if (!try_take(n)) return std::nullopt;
    return semaphore_permit(this, n);
}

bool semaphore::enqueue(acquire_awaiter& a, detail::task_header* t) noexcept {
    std::unique_lock<std::mutex> l(mu_);
    if (waiters_.empty()) {
        // Nobody ahead: take what is free now (a release may have come since await_ready).
        a.held_ += drain(a.n_ - a.held_);
        if (a.held_ == a.n_) return false;  // got everything: do not suspend
    }
    if (closed_.load(std::memory_order_relaxed)) {
        if (a.held_) permits_.fetch_add(std::exchange(a.held_, 0), std::memory_order_release);
        a.closed_ = true;
        return false;
    }
    a.node_.w = t->make_waker();
    waiters_.push_back(&a.node_);
    ++queued_;
    return true;
}

detail::wait_node* semaphore::next_waiter() noexcept {
    return faults_.lifo ? waiters_.back() : waiters_.front();  // the control serves newest first
}

void semaphore::give_locked(std::size_t n, std::unique_lock<std::mutex>& l,
                            detail::wake_batch& b) noexcept {
    while (n > 0 && !faults_.float_permits) {
        detail::wait_node* w = next_waiter();
        if (!w) break;
        auto* a = static_cast<acquire_awaiter*>(w->owner);
        const std::size_t need = a->n_ - a->held_;
        const std::size_t give = need < n ? need : n;
        a->held_ += give;
        n -= give;
        if (a->held_ == a->n_) {
            --queued_;
            b.complete(w);
            if (b.full()) {
                l.unlock();
                b.flush();
                l.lock();
            }
        }
    }
    if (n > 0) permits_.fetch_add(n, std::memory_order_release);  // pairs with try_take
}

void semaphore::release(std::size_t n) {
    if (n == 0) return;
    detail::wake_batch b;
    {
        std::unique_lock<std::mutex> l(mu_);
        if (permits_.load(std::memory_order_relaxed) + n > max_) {
            throw std::overflow_error("blitz::semaphore::release: " + std::to_string(n) +
                                      " more permits would exceed the maximum of " +
                                      std::to_string(max_));
        }
        give_locked(n, l, b);
    }
    b.flush();  // wakers run with the lock released
}

void semaphore::abandon(acquire_awaiter& a) noexcept {
    if (a.resumed_) return;
    detail::wake_batch b;
    {
        std::unique_lock<std::mutex> l(mu_);
        if (a.node_.linked()) {
            a.node_.unlink();
            --queued_;
            a.node_.w.reset();
        }
        // Whatever it was granted (partially while queued, or fully before it could resume)
        // goes to the next waiters.
        if (a.held_) give_locked(std::exchange(a.held_, 0), l, b);
    }
    b.flush();
}

void semaphore::close() {
    detail::wake_batch b;
    std::unique_lock<std::mutex> l(mu_);
    closed_.store(true, std::memory_order_release);
    detail::complete_all(waiters_, l, b, [&](detail::wait_node* w) noexcept {
        auto* a = static_cast<acquire_awaiter*>(w->owner);
        if (a->held_) permits_.fetch_add(std::exchange(a->held_, 0), std::memory_order_release);
        a->closed_ = true;
        --queued_;
    });
    l.unlock();
    b.flush();
}

std::size_t semaphore::waiters() const {
    std::lock_guard<std::mutex> l(mu_);
    return queued_;
}

}  // namespace blitz
