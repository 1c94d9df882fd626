// SPDX-License-Identifier: MIT
#include "io/uring_backend.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>

#include "blitz/detail/faults.hpp"
#include "io/buffer_pool.hpp"
#include "io/io_driver.hpp"
#include "io/op_state.hpp"
#include "io/scheduled_io.hpp"

namespace blitz::detail {
namespace {

// user_data: a block's address (its poll), the waker's poll, a block's address with the
// removal bit (the POLL_REMOVE that cancels its poll), an operation state's address with the
// operation bit and its generation in the top 16 bits, or the tag of an ASYNC_CANCEL (whose own
// result is not needed: the cancelled operation's completion says what happened). Blocks and
// states are 16-byte aligned; user-space addresses fit in 48 bits.
constexpr std::uint64_t waker_tag = 1;
constexpr std::uint64_t removal_bit = 2;
constexpr std::uint64_t cancel_tag = 3;
constexpr std::uint64_t watch_tag = 5;  // a worker ring's watch() poll (tested before op_bit)
constexpr std::uint64_t op_bit = 4;
constexpr unsigned gen_shift = 48;
constexpr std::uint16_t pool_group = 0;  // the buffer group of pooled receives

std::uint64_t op_user_data(const io_op_state* op) noexcept {
    return reinterpret_cast<std::uint64_t>(op) | op_bit | (std::uint64_t{op->gen} << gen_shift);
}

constexpr unsigned poll_mask = POLLIN | POLLOUT | POLLRDHUP | POLLPRI;

// Linux 6.15's io_uring_enter flag that keeps a wait out of iowait, and the feature bit that
// says the kernel has it (Debian 12's headers predate both).
constexpr unsigned enter_no_iowait = 1u << 7;
constexpr unsigned feat_no_iowait = 1u << 17;

int enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags, void* arg,
          std::size_t arg_size) noexcept {
    const long r = syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, arg, arg_size);
    return r < 0 ? -errno : static_cast<int>(r);
}

}  // namespace

std::string io_uring_disabled_setting() {
    std::ifstream f("/proc/sys/kernel/io_uring_disabled");
    std::string v;
    if (!(f >> v)) return "absent";
    return v;
}

std::uint64_t uring_backend::user_data_of(const io_op_state* op) noexcept {
    return op_user_data(op);
}

std::unique_ptr<uring_backend> uring_backend::create_worker_ring(unsigned entries,
                                                                 std::uint32_t file_ops,
                                                                 unsigned pool_buffers,
                                                                 unsigned pool_size,
                                                                 uring_probe_result& why) {
    std::unique_ptr<uring_backend> b(new uring_backend());
    io_uring_params p{};
    p.flags = IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
              IORING_SETUP_TASKRUN_FLAG;
    int r = io_uring_queue_init_params(entries, &b->ring_, &p);
    if (r == -EINVAL) {
        // No DEFER_TASKRUN (Linux 6.0): completion work still waits for the owner to enter the
        // kernel, but runs on any entry (and on its return from an interrupt).
        p = io_uring_params{};
        p.flags = IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN |
                  IORING_SETUP_TASKRUN_FLAG;
        r = io_uring_queue_init_params(entries, &b->ring_, &p);
    } else if (r == 0) {
        b->defer_taskrun_ = true;
    }
    if (r < 0) {
        why.error = -r;
        why.what = "io_uring_queue_init with SINGLE_ISSUER (Linux 6.0)";
        return nullptr;
    }
    b->ring_up_ = true;
    b->worker_ring_ = true;
    b->no_iowait_ = (p.features & feat_no_iowait) != 0;
    b->coop_taskrun_ = true;  // TASKRUN_FLAG: the flag says when to enter
    b->file_ops_ = file_ops;
    // The buffer ring is registered now, before any thread is the ring's issuer (the kernel
    // takes registrations from anyone until the ring is enabled), so the pool is fixed before
    // the workers start and anyone may read it.
    b->make_pool(pool_buffers, pool_size);
    return b;
}

int uring_backend::enable_here(unsigned file_slots, const char*& what) noexcept {
    what = "IORING_REGISTER_ENABLE_RINGS";
    // A raw io_uring_register: Debian's liburing 2.3 declares io_uring_enable_rings but does
    // not export it.
    if (::syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr,
                  0) != 0) {
        return -errno;
    }
    // Optional: a kernel without them still runs the ring.
    registered_fd_ = io_uring_register_ring_fd(&ring_) == 1;
    if (file_slots != 0) (void)io_uring_register_files_sparse(&ring_, file_slots);
    // The waker: a parked worker sleeps in this ring, and an unpark reaches it through the
    // eventfd's multishot poll (armed by the owner, the ring's one issuer).
    what = "eventfd";
    if (waker_.fd() < 0) return -EMFILE;
    lock_guard l(sq_mu_);
    arm_waker();
    submit_locked();
    return 0;
}

std::unique_ptr<uring_backend> uring_backend::create(unsigned entries, int fake_errno,
                                                     unsigned pool_buffers, unsigned pool_size,
                                                     int sqpoll_cpu, bool coop_taskrun,
                                                     uring_probe_result& why) {
    std::unique_ptr<uring_backend> b(new uring_backend());
    auto failed = [&](int err, std::string what) {
        why.error = err;
        why.what = std::move(what);
        return nullptr;
    };
    if (fake_errno != 0) return failed(fake_errno, "io_uring_queue_init (a test's fault)");
    io_uring_params p{};
    if (sqpoll_cpu >= 0) {
        // The kernel thread keeps polling for a second after the last submission before it
        // sleeps (liburing's submit then wakes it with one io_uring_enter).
        p.flags |= IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
        p.sq_thread_cpu = static_cast<unsigned>(sqpoll_cpu);
        p.sq_thread_idle = 1000;
    }
    if (coop_taskrun) {
        // Busy mode: completions that need the submitter's task work wait for it to enter the
        // kernel (which a spinning worker does when the TASKRUN flag is up) instead of an
        // interrupt that would pull a spinning thread into the kernel anyway.
        io_uring_params q = p;
        q.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
        if (io_uring_queue_init_params(entries, &b->ring_, &q) == 0) {
            b->coop_taskrun_ = true;
            p = q;
        }
    }
    if (const int r = b->coop_taskrun_ ? 0 : io_uring_queue_init_params(entries, &b->ring_, &p);
        r < 0) {
        if (sqpoll_cpu >= 0) {
            // Is it the SQPOLL request? A plain ring that sets up says so.
            io_uring plain{};
            if (io_uring_queue_init(entries, &plain, 0) == 0) {
                io_uring_queue_exit(&plain);
                why.sqpoll = true;
            }
            return failed(-r,
                          "io_uring_queue_init with SQPOLL on CPU " + std::to_string(sqpoll_cpu));
        }
        return failed(-r, "io_uring_queue_init");
    }
    b->sqpoll_cpu_ = sqpoll_cpu;
    b->ring_up_ = true;
    const unsigned need_features = IORING_FEAT_NODROP | IORING_FEAT_FAST_POLL | IORING_FEAT_EXT_ARG;
    if ((p.features & need_features) != need_features) {
        return failed(EOPNOTSUPP, "features NODROP, FAST_POLL and EXT_ARG (kernel 5.11)");
    }
    // The opcode probe, by hand: io_uring_get_probe_ring hides the errno of the registration
    // (a filter that allows rings but refuses io_uring_register gives EPERM, not EOPNOTSUPP).
    constexpr unsigned probe_ops = 256;
    auto* probe = static_cast<io_uring_probe*>(
        std::calloc(1, sizeof(io_uring_probe) + probe_ops * sizeof(io_uring_probe_op)));
    if (!probe) return failed(ENOMEM, "opcode probe");
    if (const int r = io_uring_register_probe(&b->ring_, probe, probe_ops); r < 0) {
        io_uring_free_probe(probe);
        return failed(-r, "io_uring_register (opcode probe)");
    }
    const struct {
        int op;
        const char* name;
    } ops[] = {{IORING_OP_POLL_ADD, "POLL_ADD"},
               {IORING_OP_POLL_REMOVE, "POLL_REMOVE"},
               {IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL"},
               {IORING_OP_RECV, "RECV"},
               {IORING_OP_SEND, "SEND"}};
    for (const auto& o : ops) {
        if (!io_uring_opcode_supported(probe, o.op)) {
            io_uring_free_probe(probe);
            return failed(EOPNOTSUPP, std::string("opcode ") + o.name);
        }
    }
    // File operations are optional, each on its own: one the kernel lacks runs on the blocking
    // pool (blitz/fs.hpp).
    const struct {
        int op;
        io_op_kind kind;
    } file_ops[] = {{IORING_OP_OPENAT, io_op_kind::file_open},
                    {IORING_OP_READ, io_op_kind::file_read},
                    {IORING_OP_WRITE, io_op_kind::file_write},
                    {IORING_OP_STATX, io_op_kind::file_statx},
                    {IORING_OP_FSYNC, io_op_kind::file_fsync},
                    {IORING_OP_CLOSE, io_op_kind::file_close},
                    {IORING_OP_RENAMEAT, io_op_kind::file_rename},
                    {IORING_OP_UNLINKAT, io_op_kind::file_unlink},
                    {IORING_OP_SEND_ZC, io_op_kind::send_zc}};
    for (const auto& o : file_ops) {
        if (io_uring_opcode_supported(probe, o.op)) {
            b->file_ops_ |= 1u << static_cast<unsigned>(o.kind);
        }
    }
    io_uring_free_probe(probe);
    if (b->waker_.fd() < 0) return failed(errno, "eventfd");
    // The waker's multishot poll must deliver (multishot poll needs kernel 5.13): write once,
    // see one completion that says more will come.
    {
        lock_guard l(b->sq_mu_);
        b->arm_waker();
        b->submit_locked();
    }
    b->waker_.wake(b->counts);
    __kernel_timespec ts{1, 0};
    io_uring_cqe* cqe = nullptr;
    const int r = io_uring_wait_cqe_timeout(&b->ring_, &cqe, &ts);
    if (r < 0) return failed(-r, "multishot poll self-test");
    const bool ok = cqe->user_data == waker_tag && cqe->res > 0 && (cqe->flags & IORING_CQE_F_MORE);
    const int res = cqe->res;
    io_uring_cqe_seen(&b->ring_, cqe);
    if (!ok) return failed(res < 0 ? -res : EOPNOTSUPP, "multishot poll self-test");
    b->waker_.drain(b->counts);
    b->make_pool(pool_buffers, pool_size);
    return b;
}

void uring_backend::make_pool(unsigned buffers, unsigned size) {
    if (buffers == 0) {
        pool_reason_ = "no pool: io_pool_buffers = 0";
    } else if (pool_ = buffer_pool::create(ring_, buffers, size, pool_group, pool_reason_);
               !pool_) {
        pool_reason_ = "no pool: " + pool_reason_;
    }
}

uring_backend::~uring_backend() {
    if (ring_up_) io_uring_queue_exit(&ring_);
    if (pool_) pool_->unref();  // the ring no longer names its memory
}

io_uring_sqe* uring_backend::sqe_locked() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (!sqe) {
        submit_locked();
        sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
}

void uring_backend::submit_locked() {
    staged_.store(false, std::memory_order_relaxed);
    // With SQPOLL a submission is a syscall only when the polling thread sleeps (liburing then
    // enters to wake it).
    if (sqpoll_cpu_ < 0 || (IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_NEED_WAKEUP)) {
        counts.bump(counts.submits);
    }
    int r;
    // EINTR and EBUSY (the CQ is full of completions the driver has not reaped): retry.
    while ((r = io_uring_submit(&ring_)) == -EINTR || r == -EBUSY || r == -EAGAIN) {
        sched_yield();
    }
}

void uring_backend::arm_poll(scheduled_io* s) {
    published_.fetch_add(1, std::memory_order_release);  // s is complete before the kernel has it
    io_uring_sqe* sqe = sqe_locked();
    io_uring_prep_poll_multishot(sqe, s->fd(), poll_mask);
    io_uring_sqe_set_data64(sqe, reinterpret_cast<std::uint64_t>(s));
}

void uring_backend::arm_waker() {
    io_uring_sqe* sqe = sqe_locked();
    io_uring_prep_poll_multishot(sqe, waker_.fd(), POLLIN);
    io_uring_sqe_set_data64(sqe, waker_tag);
}

void uring_backend::add(scheduled_io* s) {
    lock_guard l(sq_mu_);
    arm_poll(s);
    submit_locked();
}

void uring_backend::remove(scheduled_io* s) noexcept {
    lock_guard l(sq_mu_);
    removal_of(s).removing = true;  // read when the poll's final completion arrives
    submit_removal(s);
}

void uring_backend::submit_removal(scheduled_io* s) {
    ++removal_of(s).removals;
    io_uring_sqe* sqe = sqe_locked();
    io_uring_prep_poll_remove(sqe, reinterpret_cast<std::uint64_t>(s));
    io_uring_sqe_set_data64(sqe, reinterpret_cast<std::uint64_t>(s) | removal_bit);
    submit_locked();
}

std::size_t uring_backend::reap(io_event_sink& sink, bool& woken) noexcept {
    std::size_t reported = 0;
    io_uring_cqe* cqes[64];
    for (;;) {
        const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, 64);
        if (n == 0) break;
        (void)published_.load(std::memory_order_acquire);  // see published_
        for (unsigned i = 0; i < n; ++i) {
            const io_uring_cqe* c = cqes[i];
            const bool more = c->flags & IORING_CQE_F_MORE;
            if (c->user_data == cancel_tag) continue;
            if (c->user_data == watch_tag) {
                watch_armed_ = false;  // one-shot: the next park arms another
                watch_fired_ = true;
                woken = true;
                continue;
            }
            if (c->user_data & op_bit) {
                auto* op = reinterpret_cast<io_op_state*>(c->user_data &
                                                          ((std::uint64_t{1} << gen_shift) - 1) &
                                                          ~(op_bit | removal_bit | waker_tag));
                // A state is freed only after its final completion (a multishot receive's last
                // one), so the generation always matches; the check guards the invariant.
                if (worker_ring_ && !more) {
                    in_flight_.store(in_flight_.load(std::memory_order_relaxed) - 1,
                                     std::memory_order_relaxed);  // relaxed: the owner's own
                }
                if (op->gen != static_cast<std::uint16_t>(c->user_data >> gen_shift)) {
                    counts.bump(counts.stale);
                } else if (op->kind == io_op_kind::recv_multishot ||
                           op->kind == io_op_kind::accept_multishot) {
                    const int buffer = (c->flags & IORING_CQE_F_BUFFER)
                                           ? static_cast<int>(c->flags >> IORING_CQE_BUFFER_SHIFT)
                                           : -1;
                    sink.multishot(op, c->res, buffer, more);
                    ++reported;
                } else if (op->kind == io_op_kind::send_zc && more) {
                    // SEND_ZC's first completion: the bytes sent. The notification that the
                    // kernel is done with the buffer follows, and is the final completion.
                    op->zc_sent = c->res;
                } else if (!more) {
                    const bool notif =
                        op->kind == io_op_kind::send_zc && (c->flags & IORING_CQE_F_NOTIF);
                    sink.completed(op, notif ? op->zc_sent : c->res);
                    ++reported;  // a parked worker must leave the driver for the task it woke
                }
                continue;
            }
            if (c->user_data & removal_bit) {
                // The POLL_REMOVE's own result. -EALREADY: the poll was running its wakeup and
                // could not be taken off; it is still armed (and holds the file open), so try
                // again. 0 or -ENOENT: removed or already ended; the poll's final completion
                // says so (or did).
                auto* s = reinterpret_cast<scheduled_io*>(c->user_data & ~removal_bit);
                lock_guard l(sq_mu_);
                scheduled_io::poll_removal& r = removal_of(s);
                --r.removals;
                if (!r.ended && (c->res == -EALREADY || c->res == -EBUSY)) {
                    submit_removal(s);
                } else if (r.ended && r.removals == 0) {
                    sink.released(s);
                }
                continue;
            }
            if (c->user_data == waker_tag) {
                waker_.drain(counts);
                woken = true;
                if (!more) {
                    lock_guard l(sq_mu_);
                    arm_waker();
                    submit_locked();
                }
                continue;
            }
            auto* s = reinterpret_cast<scheduled_io*>(c->user_data);
            if (c->res > 0) {
                sink.ready(s, bits_from_poll_mask(static_cast<std::uint32_t>(c->res)));
                ++reported;
            } else if (c->res < 0 && c->res != -ECANCELED) {
                sink.ready(s, io_error | io_readable | io_writable);
                ++reported;
            }
            if (!more) {
                // The poll ended: removed, or the kernel stopped it (it may, e.g. on overflow).
                lock_guard l(sq_mu_);
                if (scheduled_io::poll_removal& r = removal_of(s); r.removing) {
                    r.ended = true;
                    if (r.removals == 0) sink.released(s);
                } else {
                    arm_poll(s);
                    submit_locked();
                }
            }
        }
        io_uring_cq_advance(&ring_, n);
    }
    return reported;
}

std::size_t uring_backend::wait(std::chrono::nanoseconds timeout, io_event_sink& sink) noexcept {
    bool woken = false;
    std::size_t reported = reap(sink, woken);
    const bool overflow = IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_CQ_OVERFLOW;
    // A drained wake ends the wait like an event: its target (the caller, when a parked worker
    // was claimed) checks its parker before any sleep.
    if ((reported > 0 || woken) && !overflow) return reported;
    if (timeout.count() == 0 && !overflow) return reported;
    flush();  // nothing staged may wait behind our sleep
    // Wait (or flush overflowed completions) in the kernel; no submissions from here.
    __kernel_timespec ts{};
    io_uring_getevents_arg arg{};
    arg.sigmask_sz = _NSIG / 8;
    unsigned flags = IORING_ENTER_GETEVENTS;
    if (timeout.count() >= 0) {
        ts.tv_sec = timeout.count() / 1'000'000'000;
        ts.tv_nsec = timeout.count() % 1'000'000'000;
        arg.ts = reinterpret_cast<std::uint64_t>(&ts);
        flags |= IORING_ENTER_EXT_ARG;
    }
    counts.bump(counts.waits);
    const unsigned want = overflow ? 0 : 1;
    if (flags & IORING_ENTER_EXT_ARG) {
        enter(ring_.ring_fd, 0, want, flags, &arg, sizeof arg);
    } else {
        enter(ring_.ring_fd, 0, want, flags, nullptr, _NSIG / 8);
    }
    return reported + reap(sink, woken);
}

void uring_backend::wake() noexcept { waker_.wake(counts); }

namespace {
// io_uring_enter on a worker ring: through the registered descriptor when there is one.
int enter_own(io_uring& ring, bool registered, unsigned to_submit, unsigned min_complete,
              unsigned flags, void* arg, std::size_t arg_size) noexcept {
    if (registered) {
        return enter(ring.enter_ring_fd, to_submit, min_complete,
                     flags | IORING_ENTER_REGISTERED_RING, arg, arg_size);
    }
    return enter(ring.ring_fd, to_submit, min_complete, flags, arg, arg_size);
}
}  // namespace

unsigned uring_backend::publish_staged() noexcept {
    if (!staged_.load(std::memory_order_relaxed)) return 0;
    // liburing keeps its flush of the submission queue private; this is the same step for a
    // ring without SQPOLL (the kernel reads the tail when entered; the index array is the
    // identity). The io_uring_enter that follows submits what it published.
    lock_guard l(sq_mu_);
    staged_.store(false, std::memory_order_relaxed);
    ring_.sq.sqe_head = ring_.sq.sqe_tail;
    io_uring_smp_store_release(ring_.sq.ktail, ring_.sq.sqe_tail);
    return io_uring_sq_ready(&ring_);
}

std::size_t uring_backend::poll_own(io_event_sink& sink) noexcept {
    // One io_uring_enter for the submissions the last tick staged and the completion work the
    // kernel deferred to this thread (workers do not flush their own ring at a tick's end: the
    // next look, at the next tick's start or in the park, submits it).
    const unsigned to_submit = publish_staged();
    if (to_submit != 0 ||
        (IO_URING_READ_ONCE(*ring_.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))) {
        counts.bump(to_submit != 0 ? counts.submits : counts.waits);
        enter_own(ring_, registered_fd_, to_submit, 0, IORING_ENTER_GETEVENTS, nullptr, _NSIG / 8);
    }
    if (io_uring_cq_ready(&ring_) == 0) return 0;
    bool woken = false;
    return reap(sink, woken);
}

void uring_backend::watch(int fd) noexcept {
    if (watch_armed_) return;
    watch_armed_ = true;
    lock_guard l(sq_mu_);
    io_uring_sqe* sqe = sqe_locked();
    io_uring_prep_poll_add(sqe, fd, POLLIN);
    io_uring_sqe_set_data64(sqe, watch_tag);
    staged_.store(true, std::memory_order_relaxed);  // goes out with the wait that follows
}

std::size_t uring_backend::wait_own(std::chrono::nanoseconds timeout,
                                    io_event_sink& sink) noexcept {
    const unsigned to_submit = publish_staged();  // submitted by the wait's own enter
    __kernel_timespec ts{};
    ts.tv_sec = timeout.count() / 1'000'000'000;
    ts.tv_nsec = timeout.count() % 1'000'000'000;
    io_uring_getevents_arg arg{};
    arg.sigmask_sz = _NSIG / 8;
    arg.ts = reinterpret_cast<std::uint64_t>(&ts);
    counts.bump(counts.waits);
    unsigned flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
    if (no_iowait_) flags |= enter_no_iowait;
    if (enter_own(ring_, registered_fd_, to_submit, 1, flags, &arg, sizeof arg) == -EINVAL &&
        no_iowait_) {
        no_iowait_ = false;  // the flag was refused after all: wait without it from now on
        enter_own(ring_, registered_fd_, to_submit, 1, flags & ~enter_no_iowait, &arg, sizeof arg);
    }
    bool woken = false;
    return reap(sink, woken);
}

void uring_backend::cancel_user_data(std::uint64_t user_data) noexcept {
    lock_guard l(sq_mu_);
    io_uring_sqe* sqe = sqe_locked();
    io_uring_prep_cancel64(sqe, user_data, 0);
    io_uring_sqe_set_data64(sqe, cancel_tag);
    submit_locked();
}

void uring_backend::run_task_work() noexcept {
    if (!coop_taskrun_ || !(IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_TASKRUN)) return;
    counts.bump(counts.waits);
    enter(ring_.ring_fd, 0, 0, IORING_ENTER_GETEVENTS, nullptr, _NSIG / 8);
}

int uring_backend::enable_napi_busy_poll(unsigned usecs, const char*& what) noexcept {
    // IORING_REGISTER_NAPI (Linux 6.9; Debian 12's headers and liburing 2.3 predate it). The
    // argument is struct io_uring_napi: the timeout, prefer_busy_poll, then zeros (later kernels
    // read an opcode there whose 0 is this registration with dynamic tracking).
    constexpr unsigned register_napi = 27;
    struct napi_args {
        std::uint32_t busy_poll_to;
        std::uint8_t prefer_busy_poll;
        std::uint8_t pad[3];
        std::uint64_t resv;
    } args{};
    static_assert(sizeof(napi_args) == 16);
    args.busy_poll_to = usecs;
    what = "IORING_REGISTER_NAPI";
    if (::syscall(__NR_io_uring_register, ring_.ring_fd, register_napi, &args, 1) != 0) {
        return -errno;
    }
    return 0;
}

void uring_backend::submit(io_op_state* op) noexcept {
    lock_guard l(sq_mu_);
    published_.fetch_add(1, std::memory_order_release);  // the state before the kernel has it
    // A linked pair must go out in one submission: room for both first.
    if (op->linked && io_uring_sq_space_left(&ring_) < 2) submit_locked();
    io_uring_sqe* sqe = sqe_locked();
    switch (op->kind) {
        case io_op_kind::recv:
            io_uring_prep_recv(sqe, op->fd, op->buf.data(), op->buf.capacity(), 0);
            break;
        case io_op_kind::recv_multishot:
            io_uring_prep_recv_multishot(sqe, op->fd, nullptr, 0, 0);
            sqe->flags |= IOSQE_BUFFER_SELECT;
            sqe->buf_group = pool_group;
            break;
        case io_op_kind::accept_multishot:
            io_uring_prep_multishot_accept(sqe, op->fd, nullptr, nullptr,
                                           SOCK_NONBLOCK | SOCK_CLOEXEC);
            break;
        case io_op_kind::send: {
            // MSG_WAITALL: on a stream the kernel retries a short send until every byte is out
            // (or an error or a cancel ends it, with the count sent so far).
            int flags = MSG_NOSIGNAL | MSG_WAITALL;
#if BLITZ_FAULTS
            if (fault_io_no_msg_nosignal()) flags &= ~MSG_NOSIGNAL;  // O9's control
#endif
            io_uring_prep_send(sqe, op->fd, op->buf.data(), op->buf.size(), flags);
            break;
        }
        case io_op_kind::send_zc:
            io_uring_prep_send_zc(sqe, op->fd, op->buf.data(), op->buf.size(),
                                  MSG_NOSIGNAL | MSG_WAITALL, 0);
            break;
        case io_op_kind::file_open:
            io_uring_prep_openat(sqe, AT_FDCWD, reinterpret_cast<const char*>(op->buf.data()),
                                 op->file.flags, op->file.mode);
            break;
        case io_op_kind::file_read:
            io_uring_prep_read(sqe, op->fd, op->buf.data(),
                               static_cast<unsigned>(op->buf.capacity()), op->file.offset);
            break;
        case io_op_kind::file_write:
            io_uring_prep_write(sqe, op->fd, op->buf.data(), static_cast<unsigned>(op->buf.size()),
                                op->file.offset);
            break;
        case io_op_kind::file_statx: {
            auto* out = reinterpret_cast<struct statx*>(op->buf.data());
            const char* path = reinterpret_cast<const char*>(op->buf.data() + sizeof(struct statx));
            if (*path) {
                io_uring_prep_statx(sqe, AT_FDCWD, path, op->file.flags, STATX_BASIC_STATS, out);
            } else {
                io_uring_prep_statx(sqe, op->fd, path, op->file.flags | AT_EMPTY_PATH,
                                    STATX_BASIC_STATS, out);
            }
            break;
        }
        case io_op_kind::file_fsync:
            io_uring_prep_fsync(sqe, op->fd, 0);
            break;
        case io_op_kind::file_close:
            io_uring_prep_close(sqe, op->fd);
            break;
        case io_op_kind::file_rename: {
            const char* from = reinterpret_cast<const char*>(op->buf.data());
            io_uring_prep_renameat(sqe, AT_FDCWD, from, AT_FDCWD, from + op->file.aux, 0);
            break;
        }
        case io_op_kind::file_unlink:
            io_uring_prep_unlinkat(sqe, AT_FDCWD, reinterpret_cast<const char*>(op->buf.data()),
                                   op->file.flags);
            break;
    }
    io_uring_sqe_set_data64(sqe, op_user_data(op));
    if (op->linked) {
        // The deadline of the timeout() it was started under: the kernel cancels it then
        // (its result -ECANCELED). The timeout's own completion is ignored, like a cancel's.
        sqe->flags |= IOSQE_IO_LINK;
        io_uring_sqe* t = sqe_locked();
        io_uring_prep_link_timeout(t, &op->link_deadline, IORING_TIMEOUT_ABS);
        io_uring_sqe_set_data64(t, cancel_tag);
    }
    if (worker_ring_) {
        // relaxed: the owner alone writes it
        in_flight_.store(in_flight_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
#if BLITZ_FAULTS
    if (io_fault(&testing::runtime_faults::io_submit_per_op)) {  // O15's control: one
                                                                 // io_uring_enter per operation
        submit_locked();
        return;
    }
#endif
    staged_.store(true, std::memory_order_relaxed);  // the tick's end submits it
}

void uring_backend::flush() noexcept {
    if (!staged_.load(std::memory_order_relaxed)) return;
    lock_guard l(sq_mu_);
    if (staged_.load(std::memory_order_relaxed)) submit_locked();
}

void uring_backend::cancel(io_op_state* op) noexcept {
    lock_guard l(sq_mu_);
    io_uring_sqe* sqe = sqe_locked();
    io_uring_prep_cancel64(sqe, op_user_data(op), 0);
    io_uring_sqe_set_data64(sqe, cancel_tag);
    submit_locked();
}

}  // namespace blitz::detail
