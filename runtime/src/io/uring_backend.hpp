// SPDX-License-Identifier: MIT
#pragma once
// The io_uring backend. Readiness: one shared ring (default setup flags: no SINGLE_ISSUER
// or DEFER_TASKRUN, because any worker submits and any worker may wait, IO.md 0.4), a
// multishot POLL_ADD armed once per descriptor (edge-triggered, re-armed if the kernel ends it),
// and an eventfd with its own multishot poll as the waker. Completion operations: RECV and SEND
// on owned buffers, and the file opcodes the probe finds (OPENAT, READ, WRITE, STATX, FSYNC,
// CLOSE, RENAMEAT, UNLINKAT), each naming its io_op_state (with the state's generation) in
// user_data.

#include <liburing.h>

#include <string>

#include "blitz/detail/mutex.hpp"
#include "io/backend.hpp"

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
    ~uring_backend() override;

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
    // Takes an SQE under sq_mu_, submitting what is queued if the ring is full.
    io_uring_sqe* sqe_locked() BLITZ_REQUIRES(sq_mu_);
    void arm_poll(scheduled_io* s) BLITZ_REQUIRES(sq_mu_);
    void arm_waker() BLITZ_REQUIRES(sq_mu_);
    void submit_removal(scheduled_io* s) BLITZ_REQUIRES(sq_mu_);
    void submit_locked() BLITZ_REQUIRES(sq_mu_);
    // Reports what the completion queue holds; `woken` is set when it drained the waker.
    std::size_t reap(io_event_sink& sink, bool& woken) noexcept;

    io_uring ring_{};
    bool ring_up_ = false;
    int sqpoll_cpu_ = -1;
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
