// SPDX-License-Identifier: MIT
#pragma once
// The io_uring backend. Readiness: one shared ring (default setup flags: no SINGLE_ISSUER
// or DEFER_TASKRUN, because any worker submits and any worker may wait, IO.md 0.4), a
// multishot POLL_ADD armed once per descriptor (edge-triggered, re-armed if the kernel ends it),
// and an eventfd with its own multishot poll as the waker. Completion operations: RECV and SEND
// on owned buffers, and the file opcodes the probe finds (OPENAT, READ, WRITE, STATX, FSYNC,
// CLOSE, RENAMEAT, UNLINKAT), each naming its io_op_state (with the state's generation) in
// user_data.
//
// Invariants: a state named in user_data is alive until its final completion is reported
// (the slab keeps it, R3); a block named by a poll is alive until released() is reported for
// it (R6); a worker ring is entered only by the thread that enabled it (SINGLE_ISSUER).
// Memory ordering: published_ is raised (release) before each submission and read (acquire)
// after completions are seen, which makes the kernel's own submission-before-completion order
// visible to ThreadSanitizer; staged_ is a hint read without sq_mu_.
// Thread-safety: the shared ring's submissions from any thread under sq_mu_, its reaping by
// the driver's lock holder; a worker ring by its owner only.

#include <liburing.h>

#include <string>
#include <utility>

#include "blitz/detail/mutex.hpp"
#include "io/backend.hpp"
#include "io/scheduled_io.hpp"

namespace blitz::detail {

// What the startup probe found. `error` is 0 when io_uring is usable.
struct uring_probe_result {
    int error = 0;
    std::string what;     // the failing step, e.g. "io_uring_queue_init" or "opcode POLL_REMOVE"
    bool sqpoll = false;  // the setup failed only because of the SQPOLL request
};

class uring_backend final : public io_backend {
public:
    // Sets the ring up and checks what the driver needs (features NODROP, FAST_POLL, EXT_ARG;
    // opcodes POLL_ADD, POLL_REMOVE, ASYNC_CANCEL; a multishot poll that delivers). On failure
    // returns null and fills `why`. `fake_errno` (tests) fails the setup with that errno.
    // `pool_buffers` and `pool_size`: the provided-buffer pool of pooled receives (0 buffers:
    // none); the kernel refusing it is not an error (pooled reads then use heap buffers, and
    // pool_reason() says why).
    // `sqpoll_cpu` >= 0: a submission-queue polling kernel thread bound to that CPU
    // (IORING_SETUP_SQPOLL | SQ_AFF); its failure sets why.sqpoll.
    static std::unique_ptr<uring_backend> create(unsigned entries, int fake_errno,
                                                 unsigned pool_buffers, unsigned pool_size,
                                                 int sqpoll_cpu, bool coop_taskrun,
                                                 uring_probe_result& why);
    // Busy mode's per-worker ring (IO.md 7.6): completion operations only (no readiness polls,
    // no waker), set up disabled with SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG (or, on a
    // kernel without DEFER_TASKRUN, SINGLE_ISSUER | COOP_TASKRUN | TASKRUN_FLAG), so the worker
    // that enables it (enable_here) is its only submitter. `file_ops`: the opcodes the shared
    // ring's probe found. On failure returns null and fills `why`.
    // `pool_buffers` x `pool_size`: the ring's own provided-buffer pool (0 buffers: none; a
    // refusal leaves the ring without one, and its pooled receives go to the shared ring).
    static std::unique_ptr<uring_backend> create_worker_ring(unsigned entries,
                                                             std::uint32_t file_ops,
                                                             unsigned pool_buffers,
                                                             unsigned pool_size,
                                                             uring_probe_result& why);
    ~uring_backend() override;

    // Worker rings, on the owning worker's thread only:
    // Enables the ring with this thread as its one issuer, registers the ring's descriptor with
    // this thread (io_uring_enter then skips the file lookup) and a sparse file table. Returns
    // 0 or -errno (`what` names the failed step).
    int enable_here(unsigned file_slots, const char*& what) noexcept;
    // Runs the completion work the kernel deferred to this thread when the ring flags some
    // (DEFER_TASKRUN: completions are posted only then), then reports the completion queue.
    std::size_t poll_own(io_event_sink& sink) noexcept;
    // Reports the completion queue without entering the kernel.
    std::size_t reap_own(io_event_sink& sink) noexcept {
        if (io_uring_cq_ready(&ring_) == 0) return 0;
        bool woken = false;
        return reap(sink, woken);
    }
    // Waits up to `timeout` for at least one completion (a parked worker's sleep, and its drain
    // before it exits); wake() and a fired watch() end it too. Where the kernel has it (6.15),
    // the sleep is not counted as iowait (IORING_ENTER_NO_IOWAIT).
    std::size_t wait_own(std::chrono::nanoseconds timeout, io_event_sink& sink) noexcept;
    // A one-shot poll of `fd` for readability on this ring, armed unless one is armed already
    // (a parked worker holding the shared driver watches the shared ring's descriptor from its
    // own ring). take_watch_fired() says whether it completed since the last call.
    void watch(int fd) noexcept;
    bool take_watch_fired() noexcept { return std::exchange(watch_fired_, false); }
    bool no_iowait() const noexcept { return no_iowait_; }
    // Cancels the operation named by `user_data` (an operation state and its generation, taken
    // when another thread asked: the state may have been reused since, and then nothing matches).
    void cancel_user_data(std::uint64_t user_data) noexcept;
    // Operations submitted to this ring whose final completion has not been reaped.
    std::uint64_t in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed); }
    bool defer_taskrun() const noexcept { return defer_taskrun_; }
    // The ring's descriptor (epoll watches a file ring through it: epoll_backend).
    int ring_fd() const noexcept { return ring_.ring_fd; }
    int completion_fd() const noexcept override { return ring_.ring_fd; }
    // The user_data of `op` as it is now (its generation included).
    static std::uint64_t user_data_of(const io_op_state* op) noexcept;

    const char* name() const noexcept override { return "io_uring"; }
    void add(scheduled_io* s) override;
    void remove(scheduled_io* s) noexcept override;
    bool releases_at_once() const noexcept override { return false; }
    std::size_t wait(std::chrono::nanoseconds timeout, io_event_sink& sink) noexcept override;
    void wake() noexcept override;
    bool free_poll() const noexcept override { return true; }
    bool completion_ops() const noexcept override { return true; }
    void submit(io_op_state* op) noexcept override;
    void cancel(io_op_state* op) noexcept override;
    void flush() noexcept override;
    bool runs(io_op_kind kind) const noexcept override {
        return (file_ops_ >> static_cast<unsigned>(kind)) & 1u;
    }
    buffer_pool* pool() const noexcept override { return pool_; }
    std::string pool_reason() const override { return pool_reason_; }
    // The SQPOLL thread's CPU, or -1 when submissions are io_uring_enter calls.
    int sqpoll_cpu() const noexcept override { return sqpoll_cpu_; }
    void run_task_work() noexcept override;
    bool coop_taskrun() const noexcept override { return coop_taskrun_; }
    int enable_napi_busy_poll(unsigned usecs, const char*& what) noexcept override;

private:
    uring_backend() = default;
    // The provided-buffer pool of pooled receives (0 buffers: none); a refusal is not an error
    // (pool_reason() says why there is none).
    void make_pool(unsigned buffers, unsigned size);
    // Takes an SQE under sq_mu_, submitting what is queued if the ring is full.
    io_uring_sqe* sqe_locked() BLITZ_REQUIRES(sq_mu_);
    void arm_poll(scheduled_io* s) BLITZ_REQUIRES(sq_mu_);
    void arm_waker() BLITZ_REQUIRES(sq_mu_);
    void submit_removal(scheduled_io* s) BLITZ_REQUIRES(sq_mu_);
    // A block's poll-removal state, reachable only under the submission mutex.
    scheduled_io::poll_removal& removal_of(scheduled_io* s) BLITZ_REQUIRES(sq_mu_) {
        return s->removal_;
    }
    void submit_locked() BLITZ_REQUIRES(sq_mu_);
    // Worker rings: makes the staged submissions visible to the kernel; returns how many the
    // next io_uring_enter must submit.
    unsigned publish_staged() noexcept;
    // Reports what the completion queue holds; `woken` is set when it drained the waker.
    std::size_t reap(io_event_sink& sink, bool& woken) noexcept;

    io_uring ring_{};
    bool ring_up_ = false;
    int sqpoll_cpu_ = -1;
    bool worker_ring_ = false;    // a busy worker's own ring (create_worker_ring)
    bool defer_taskrun_ = false;  // DEFER_TASKRUN (worker rings)
    bool registered_fd_ = false;  // io_uring_register_ring_fd succeeded (worker rings)
    bool no_iowait_ = false;      // the kernel has IORING_ENTER_NO_IOWAIT (worker rings)
    // Worker rings, owner only: a watch() poll is armed; one completed since the owner looked.
    bool watch_armed_ = false;
    bool watch_fired_ = false;
    // Worker rings: operations submitted and not yet finally completed. Written by the owner
    // only; relaxed: read by statistics and by the owner.
    atomic<std::uint64_t> in_flight_{0};
    bool coop_taskrun_ = false;    // COOP_TASKRUN | TASKRUN_FLAG (busy mode)
    std::uint32_t file_ops_ = 0;   // bit k: the probe found the opcode of io_op_kind k
    buffer_pool* pool_ = nullptr;  // one reference, dropped after the ring is gone
    std::string pool_reason_;
    eventfd_waker waker_;
    // Publication of the blocks named by user_data: a release increment before each poll is
    // submitted, an acquire load after completions are seen. The kernel orders the two already
    // (the submission precedes its completion); this makes the order visible to
    // ThreadSanitizer, which cannot see through the rings.
    atomic<std::uint64_t> published_{0};
    detail::mutex sq_mu_;  // the submission queue has many producers
    // Operations prepared in the submission queue and not yet submitted (see flush()). Set and
    // cleared under sq_mu_; read without it as a hint.
    atomic<bool> staged_{false};
};

// The text of /proc/sys/kernel/io_uring_disabled ("0", "1", "2"), or "absent".
std::string io_uring_disabled_setting();

}  // namespace blitz::detail
