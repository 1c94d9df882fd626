// SPDX-License-Identifier: MIT
#pragma once
// io_backend: the kernel interface under the I/O driver, epoll or io_uring (IO.md 7.4).

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/atomic.hpp"
#include "blitz/detail/io_api.hpp"

namespace blitz::detail {

class scheduled_io;
class buffer_pool;
struct io_op_state;

// Syscalls made by the driver, by kind (O15 counts them per request).
struct io_syscall_counts {
    atomic<std::uint64_t> waits{0};       // epoll_wait, or io_uring_enter to wait
    atomic<std::uint64_t> submits{0};     // epoll_ctl, or io_uring_enter to submit
    atomic<std::uint64_t> wakes{0};       // eventfd writes that interrupt a wait
    atomic<std::uint64_t> wake_reads{0};  // eventfd reads that rearm the waker
    // Not a syscall: completions that named an operation state already reused (a generation
    // mismatch, ignored). Always 0 unless a state was freed before its final completion (O6).
    atomic<std::uint64_t> stale{0};
    void bump(atomic<std::uint64_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
};

// "Operation not permitted (EPERM)": an errno as the driver's reasons and errors name it.
std::string errno_text(int e);

// A poll(2)/epoll readiness mask (EPOLLIN == POLLIN and so on, on Linux) as io_ready_bits:
// hang-up and error also make both directions ready, so their waiters wake and see it.
std::uint32_t bits_from_poll_mask(std::uint32_t e) noexcept;

// The backends' waker: an eventfd the driver's wait watches. wake() writes it once per
// reading: the first wake since the driver last drained it writes, the others ride on that
// write (Go's netpollBreak does the same). A wake that arrives while the driver drains can be
// absorbed; its target is then the driver's own thread, which must check its parker next, so a
// wait that drains the waker returns rather than sleeping (a wake already reaped before the
// sleep would otherwise be lost, and the sleeper with it).
//
// Invariants: at most one eventfd write is outstanding per drain (pending_); a wake made
// before a drain's exchange is seen by the drainer's thread, whose next look finds its token.
// Memory ordering: wake's exchange is acq_rel (release publishes the waker's token); drain's
// exchange is acq_rel too, an RMW so it reads every wake that rode on the pending write
// (modelled: stress/model/models/eventfd_waker_model.cpp, controls caught).
// Thread-safety: wake() from any thread; drain() by the thread that saw the eventfd readable.
class eventfd_waker {
public:
    eventfd_waker() noexcept : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
    ~eventfd_waker() {
        if (fd_ >= 0) ::close(fd_);
    }
    eventfd_waker(const eventfd_waker&) = delete;
    eventfd_waker& operator=(const eventfd_waker&) = delete;

    int fd() const noexcept { return fd_; }  // -1 (errno set) if eventfd failed
    void wake(io_syscall_counts& counts) noexcept {
        // acq_rel: the first waker since the driver's last drain writes; release publishes
        // what the waker did before (a parker's token) to the drain that reads this value
        if (pending_.exchange(true, BLITZ_ORDER(eventfd_waker_wake, std::memory_order_acq_rel))) {
            return;
        }
        const std::uint64_t one = 1;
        counts.bump(counts.wakes);
        (void)!::write(fd_, &one, sizeof one);
    }
    // The driver saw the eventfd readable: read it back to zero, then accept new writes.
    void drain(io_syscall_counts& counts) noexcept {
        std::uint64_t v;
        counts.bump(counts.wake_reads);
        (void)!::read(fd_, &v, sizeof v);
        // An RMW, not a store: a wake that rode on the pending write (its exchange read true)
        // is read here, so this thread then sees what that waker published before waking (its
        // parker token). A plain release store would let the parker check that follows read
        // an older token word (store-then-load reordering: the classic store-buffer race).
        // (Modelled: stress/model/models/eventfd_waker_model.cpp, whose controls relax this
        // exchange or make it a store.)
        if (BLITZ_MODEL_DEFECT(eventfd_waker_drain_store)) {
            pending_.store(false, std::memory_order_release);
            return;
        }
        (void)pending_.exchange(false, BLITZ_ORDER(eventfd_waker_drain, std::memory_order_acq_rel));
    }

private:
    int fd_;
    atomic<bool> pending_{false};
};

// What a backend reports for each event of a wait.
class io_event_sink {
public:
    // `s` became ready with `bits` (io_ready_bits).
    virtual void ready(scheduled_io* s, std::uint32_t bits) noexcept = 0;
    // The backend will never name `s` again (io_uring: its poll's last completion).
    virtual void released(scheduled_io* s) noexcept = 0;
    // A completion operation's final completion: `res` is its result (bytes or -errno). Called
    // with no backend lock held.
    virtual void completed(io_op_state* op, int res) noexcept = 0;
    // One completion of a multishot pooled receive: `res` bytes in pool buffer `buffer` (-1:
    // none), or its end (0 or -errno); `more` false for its final completion. Called with no
    // backend lock held.
    virtual void multishot(io_op_state* op, int res, int buffer, bool more) noexcept = 0;

protected:
    ~io_event_sink() = default;
};

// Thread-safety: add, remove and wake from any thread; wait only by the driver's lock holder.
class io_backend {
public:
    virtual ~io_backend() = default;
    virtual const char* name() const noexcept = 0;
    // Starts readiness reporting for s->fd(), edge-triggered, for reads and writes at once.
    // Throws std::system_error.
    virtual void add(scheduled_io* s) = 0;
    // Stops it. epoll: at once, but an event already taken by a wait in progress may still be
    // dispatched, so the driver frees `s` only after its next turn begins; io_uring: the
    // backend reports released(s) when the poll's final completion arrives.
    virtual void remove(scheduled_io* s) noexcept = 0;
    // True if remove() is complete when it returns (epoll), false if the backend reports
    // released() later (io_uring).
    virtual bool releases_at_once() const noexcept = 0;
    // Waits up to `timeout` (zero: just look; negative: no limit) and reports every event to
    // `sink`; returns how many events (readiness, completions) it reported. A wake() ends the wait
    // early.
    virtual std::size_t wait(std::chrono::nanoseconds timeout, io_event_sink& sink) noexcept = 0;
    // Makes the current or next wait return. Coalesced: many wakes before the wait sees one
    // cost one eventfd write.
    virtual void wake() noexcept = 0;
    // True when a zero-timeout wait costs no syscall.
    virtual bool free_poll() const noexcept = 0;
    // Completion operations (io_uring only): submit runs `op` in the kernel, which reports it
    // through io_event_sink::completed; cancel asks the kernel to end it early (its completion
    // still arrives, with -ECANCELED or its result). Both keep `op` alive; the driver frees it.
    virtual bool completion_ops() const noexcept { return false; }
    // submit may stage the operation: it reaches the kernel at the next flush() (or with any
    // other submission), which the workers make at the end of every tick.
    virtual void submit(io_op_state* /*op*/) noexcept {}
    virtual void flush() noexcept {}
    virtual void cancel(io_op_state* /*op*/) noexcept {}
    // True when submit() runs the file operation `kind` (io_uring, when the probe found it).
    virtual bool runs(io_op_kind /*kind*/) const noexcept { return false; }
    // The provided-buffer pool that recv_multishot operations draw from; null when there is
    // none (epoll, a kernel without buffer rings, or config io_pool_buffers = 0).
    virtual buffer_pool* pool() const noexcept { return nullptr; }
    // Busy mode (io_uring set up with COOP_TASKRUN | TASKRUN_FLAG): completion work the
    // kernel queued for the calling thread runs only when that thread enters the kernel, and no
    // interrupt is sent to make it; a spinning worker calls this on every look, and it enters
    // only when the ring's TASKRUN flag says some thread has such work.
    virtual void run_task_work() noexcept {}
    virtual bool coop_taskrun() const noexcept { return false; }
    // The CPU of the submission-queue polling kernel thread (io_uring SQPOLL), or -1.
    virtual int sqpoll_cpu() const noexcept { return -1; }
    // NAPI busy polling in this backend's waits for up to `usecs` (config napi_busy_poll).
    // Returns 0, or -errno; `what` names the kernel interface it used.
    virtual int enable_napi_busy_poll(unsigned usecs, const char*& what) noexcept = 0;
    // The descriptor that turns readable when a completion waits for this backend's next wait
    // (io_uring: the ring's own descriptor; a worker asleep in its own ring watches it), or -1.
    virtual int completion_fd() const noexcept { return -1; }
    // Why there is no pool (empty when there is one).
    virtual std::string pool_reason() const { return "epoll: pooled reads use heap buffers"; }

    io_syscall_counts counts;
};

// What automatic selection found.
struct io_selection {
    std::unique_ptr<io_backend> backend;  // null for io_backend_kind::none
    std::string reason;                   // why this backend (and what io_uring said)
};

}  // namespace blitz::detail
