// SPDX-License-Identifier: MIT
#pragma once
// The building blocks of the socket types: io_object (a non-blocking descriptor registered with
// the runtime's I/O driver) and io_op (an awaiter that retries one syscall on readiness).

#include <cerrno>
#include <coroutine>
#include <memory>
#include <utility>

#include "blitz/detail/context.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/dump.hpp"

namespace blitz::detail {

// Owns a descriptor and its registration. Closing deregisters first, then closes, so the
// driver never reports an event for a reused descriptor number; the driver stays alive while
// the object does (it may outlive its runtime: its waits then end with ECANCELED).
// Thread-safety: like an int: one owner; concurrent operations of different directions are
// fine (one reader and one writer, as split halves do).
class io_object {
public:
    io_object() noexcept = default;
    // Takes ownership of `fd` (made non-blocking here) and registers it with the calling task's
    // runtime. On failure closes `fd` and throws (std::logic_error outside a runtime task,
    // std::system_error if the driver refuses it).
    explicit io_object(int fd);
    io_object(io_object&& o) noexcept
        : fd_(std::exchange(o.fd_, -1)),
          sio_(std::exchange(o.sio_, nullptr)),
          driver_(std::move(o.driver_)) {}
    io_object& operator=(io_object&& o) noexcept {
        if (this != &o) {
            close();
            fd_ = std::exchange(o.fd_, -1);
            sio_ = std::exchange(o.sio_, nullptr);
            driver_ = std::move(o.driver_);
        }
        return *this;
    }
    ~io_object() { close(); }

    int fd() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    scheduled_io* sio() const noexcept { return sio_; }
    io_driver* driver() const noexcept { return driver_.get(); }
    // Deregisters and closes (idempotent). Readiness operations must not be pending; completion
    // operations in flight are cancelled, and the descriptor is closed after the last one.
    void close() noexcept;

private:
    int fd_ = -1;
    scheduled_io* sio_ = nullptr;
    std::shared_ptr<io_driver> driver_;
};

// co_await io_op<Op>(...): Op::attempt() makes the syscall (non-blocking; returns the result,
// or -errno); on -EAGAIN the awaiter waits for the direction's readiness and tries again. It
// never holds a kernel operation: destroying it while it waits only unlinks its waiter, so it
// is cancel-safe whenever the syscall itself is (read, write, accept). Each completed attempt
// spends one unit of the cooperative budget (B2, O14); out of budget it yields first.
//
// `speculate`: try the syscall before any readiness is known (writes, whose buffer space is
// usually there); otherwise wait for readiness first (reads, accepts).
// Thread-safety: one task.
template <class Op>
class io_op : private ::blitz::detail::ready_hook {
public:
    io_op(const io_object& o, io_direction dir, Op op, bool speculate) noexcept
        : sio_(o.sio()), dir_(dir), op_(std::move(op)), speculate_(speculate), node_(this) {}
    io_op(const io_op&) = delete;
    io_op& operator=(const io_op&) = delete;
    ~io_op() {
        if (!armed_) return;
        io_cancel_wait(sio_, node_);
#if BLITZ_FAULTS
        if (fault_io_drop_orphan_data()) (void)op_.attempt();  // O5's control: bytes dropped
#endif
    }

    bool await_ready() noexcept {
        if (!sio_) {
            result_ = -EBADF;  // a closed or moved-from object
            return true;
        }
        if (coop_exhausted()) {
            coop_yield_ = true;
            return false;
        }
        return (speculate_ || io_poll_ready(sio_, dir_).ready) && attempt();
    }
    bool await_suspend(std::coroutine_handle<> h) {
        task_ = suspend_current(h, &ready, this, &describe);
        if (coop_yield_) {
            mark_yielded(task_);  // back of the ring; the attempt runs on return
            return true;
        }
        return arm();
    }
    auto await_resume() { return op_.finish(result_); }

private:
    // One syscall; true when it produced a result (anything but EAGAIN).
    bool attempt() noexcept {
        const io_ready_event ev = io_poll_ready(sio_, dir_);
        if (ev.ready & io_shutdown) {
            result_ = -ECANCELED;
            return true;
        }
        const long r = op_.attempt();
        if (r == -EAGAIN || r == -EWOULDBLOCK) {
            io_clear_ready(sio_, ev);
            return false;
        }
        result_ = r;
        // An operation whose result shows the kernel's queue empty (a stream read that filled
        // less than its buffer) drops the readiness it used, as EAGAIN would: the next read
        // waits for the next edge instead of paying a syscall to learn EAGAIN (Tokio's rule for
        // partial reads). Like EAGAIN's, the clear keeps an edge newer than `ev` (O16).
        if constexpr (requires(const Op& o) { o.drained(r); }) {
            if (op_.drained(r)) io_clear_ready(sio_, ev);
        }
        coop_spend();
        return true;
    }
    // Waits for readiness; false when the operation completed instead (do not suspend).
    bool arm() {
        for (;;) {
            if (io_wait(sio_, dir_, node_, task_->make_waker())) {
                armed_ = true;
                return true;
            }
            if (attempt()) return false;  // ready meanwhile
        }
    }
    static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
        [[maybe_unused]] const auto* a = static_cast<const io_op*>(p);
        out.kind = a->dir_ == io_direction::read ? "read readiness" : "write readiness";
        out.fd = a->sio_ ? io_fd(a->sio_) : -1;
    }
    static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
        auto* a = const_cast<io_op*>(static_cast<const io_op*>(p));
        if (a->coop_yield_) {
            a->coop_yield_ = false;
        } else {
            // acquire: pairs with the driver's release of the node
            if (!a->node_.done.load(std::memory_order_acquire)) return false;  // stray wake
            a->armed_ = false;
        }
        if (a->attempt()) return true;
        return !a->arm();  // a spurious readiness: wait again without resuming
    }

    scheduled_io* sio_;
    io_direction dir_;
    Op op_;
    bool speculate_;
    bool armed_ = false;
    bool coop_yield_ = false;
    long result_ = 0;
    task_header* task_ = nullptr;
    wait_node node_;
};

}  // namespace blitz::detail
