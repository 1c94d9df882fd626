// SPDX-License-Identifier: MIT
#include "io/io_driver.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "blitz/detail/context.hpp"
#include "blitz/detail/faults.hpp"
#include "io/epoll_backend.hpp"
#include "io/op_state.hpp"
#include "io/scheduled_io.hpp"
#include "io/signal_dispatch.hpp"
#include "io/uring_backend.hpp"
#include "task/context_internal.hpp"

namespace blitz::detail {

namespace {

std::string errno_text(int e) {
    const char* name = strerrorname_np(e);
    return std::string(strerror(e)) + " (" + (name ? name : std::to_string(e)) + ")";
}

// Why io_uring could not be set up: the failed step, the errno and the kernel's switch.
std::string unavailable_text(const uring_probe_result& why) {
    return "io_uring unavailable: " + why.what + " failed with " + errno_text(why.error) +
           "; kernel.io_uring_disabled = " + io_uring_disabled_setting();
}

// The errno a test makes io_uring's setup fail with (config::debug), or 0.
int faked_setup_errno([[maybe_unused]] const config& cfg) noexcept {
#if BLITZ_FAULTS
    return cfg.debug.io_uring_setup_errno;
#else
    return 0;
#endif
}

}  // namespace

std::shared_ptr<io_driver> io_driver::create(const config& cfg, std::string& reason) {
    if (cfg.io_backend == io_backend_kind::none) {
        reason = "none: io_backend = none";
        return nullptr;
    }
    // Automatic selection (issue 44): io_uring where it is the faster backend (busy mode's rings,
    // an SQPOLL thread asked for), else epoll for sockets with a file ring beside it.
    const bool busy = cfg.io_mode == io_mode_kind::busy;
    const bool automatic_uring =
        cfg.io_backend == io_backend_kind::automatic && (busy || cfg.sqpoll_cpu >= 0);
    const bool want_uring = cfg.io_backend == io_backend_kind::io_uring ||
                            cfg.io_backend == io_backend_kind::prefer_io_uring || automatic_uring;
    std::unique_ptr<io_backend> b;
    if (want_uring) {
        bool enosys_only = false;
#if BLITZ_FAULTS
        enosys_only = cfg.debug.io_fallback_on_enosys_only;
#endif
        uring_probe_result why;
        b = uring_backend::create(cfg.io_entries, faked_setup_errno(cfg), cfg.io_pool_buffers,
                                  cfg.io_pool_buffer_size, cfg.sqpoll_cpu, busy, why);
        if (!b && why.sqpoll) {
            // io_uring works, the SQPOLL thread the configuration asks for does not.
            throw config_error("blitz::config: sqpoll_cpu = " + std::to_string(cfg.sqpoll_cpu) +
                               ": " + why.what + " failed with " + errno_text(why.error));
        }
        if (b) {
            reason =
                "io_uring: " + std::string(cfg.io_backend == io_backend_kind::io_uring
                                               ? "forced by io_backend = io_uring"
                                           : cfg.io_backend == io_backend_kind::prefer_io_uring
                                               ? "available (io_backend = prefer_io_uring)"
                                           : busy ? "automatic selection for io_mode = busy"
                                                  : "automatic selection for an SQPOLL thread");
        } else {
            const std::string said = unavailable_text(why);
            // O1's negative control: the Eio bug, falling back only on ENOSYS.
            if (cfg.io_backend == io_backend_kind::io_uring ||
                (enosys_only && why.error != ENOSYS)) {
                throw config_error("blitz::config: io_backend = io_uring, but " + said);
            }
            reason = "epoll: " + said;
            if (cfg.sqpoll_cpu >= 0) reason += "; sqpoll_cpu not applied (no io_uring)";
        }
    } else if (cfg.io_backend == io_backend_kind::automatic) {
        reason =
            "epoll: automatic selection for io_mode = shared (io_uring with a ring per worker "
            "now costs less CPU a request but is not yet ahead on every benchmark row, "
            "docs/guide/io.md; io_backend = prefer_io_uring or io_uring to choose it)";
        auto e = std::make_unique<epoll_backend>(cfg.io_entries);
        if (cfg.fs_io_uring) {
            uring_probe_result why;
            if (auto ring = uring_backend::create(cfg.io_entries, faked_setup_errno(cfg), 0, 0, -1,
                                                  false, why)) {
                e->attach_file_ring(std::move(ring));
                reason += "; files on an io_uring ring";
            } else {
                reason += "; files on the blocking pool (" + unavailable_text(why) + ")";
            }
        }
        b = std::move(e);
    } else {
        reason = "epoll: forced by io_backend = epoll";
    }
    if (!b) b = std::make_unique<epoll_backend>(cfg.io_entries);
    if (const auto us = static_cast<unsigned>(cfg.napi_busy_poll.count()); us != 0) {
        const char* what = "";
        if (const int r = b->enable_napi_busy_poll(us, what); r != 0) {
            throw config_error("blitz::config: napi_busy_poll = " + std::to_string(us) +
                               " us: " + what + " on " + b->name() + " failed with " +
                               errno_text(-r) + " (it needs Linux 6.9 or later)");
        }
    }
    std::shared_ptr<io_driver> d(new io_driver(std::move(b)));
    d->socket_busy_poll_us_ = static_cast<int>(cfg.socket_busy_poll.count());
    d->pool_ = d->backend_->pool();
    d->pool_size_ = cfg.io_pool_buffer_size;
    d->pool_count_ = cfg.io_pool_buffers;
    d->pool_queue_ = cfg.io_pool_queue;
    d->file_ops_ = cfg.fs_io_uring;
    return d;
}

io_driver::io_driver(std::unique_ptr<io_backend> b) : backend_(std::move(b)) {}

io_driver::~io_driver() = default;  // regs_ frees every block before the backend and its pool

void io_driver::apply_socket_busy_poll(int fd) noexcept {
    // TCP and UDP sockets only: a Unix socket, pipe, pidfd or eventfd has no NIC queue.
    int domain = 0;
    socklen_t len = sizeof domain;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
        (domain != AF_INET && domain != AF_INET6)) {
        return;
    }
    if (::setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &socket_busy_poll_us_,
                     sizeof socket_busy_poll_us_) == 0) {
        busy_poll_set_.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistics
        return;
    }
    int expected = 0;
    (void)busy_poll_errno_.compare_exchange_strong(expected, errno, std::memory_order_relaxed);
    busy_poll_failed_.fetch_add(1, std::memory_order_relaxed);
}

scheduled_io* io_driver::add(int fd, bool eager) {
    if (socket_busy_poll_us_ != 0) apply_socket_busy_poll(fd);
    scheduled_io* s = regs_.add(fd);
    try {
        if (nrings_ != 0 && !eager) {
            s->lazy = this;  // before anyone else has s
        } else {
            backend_->add(s);
        }
        registered_.fetch_add(1, std::memory_order_seq_cst);
    } catch (...) {
        regs_.discard(s);
        throw;
    }
    return s;
}

void io_driver::wait_armed(scheduled_io* s, io_direction dir) noexcept {
    // A read held back by a completion receive is woken by that receive, not by readiness.
    if (dir == io_direction::read && s->recv_pending()) return;
    if (!s->claim_poll()) return;
    try {
        backend_->add(s);  // its first completion reports the state now: the waiter sees it
    } catch (const std::system_error&) {
        s->set_ready(io_error | io_readable | io_writable);  // the waiter meets the error
    }
}

void io_driver::remove(scheduled_io* s) noexcept {
    registered_.fetch_sub(1, std::memory_order_seq_cst);
    if (s->claim_poll()) {
        regs_.release(s, true);  // never armed: no backend event can name it
        return;
    }
    backend_->remove(s);
    // epoll: an event taken by a wait in progress may still name s; the next turn frees it.
    regs_.release(s, backend_->releases_at_once());
}

void io_driver::released(scheduled_io* s) noexcept {
    regs_.backend_released(s);  // released by its owner already: remove() comes first
}

std::size_t io_driver::turn(std::chrono::nanoseconds timeout) noexcept {
    turns_.fetch_add(1, std::memory_order_relaxed);
    (void)regs_.free_released();
    const std::size_t n = backend_->wait(timeout, *this);
    if (n) events_.fetch_add(n, std::memory_order_relaxed);
    if (!backend_->free_poll()) {
        last_turn_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                            std::memory_order_relaxed);
    }
    return n;
}

void io_driver::flush() noexcept {
    // The caller's own ring is not flushed here: its next look (poll_own at the next tick's
    // start, or the park's wait) submits the tick's operations and reaps in one io_uring_enter.
    backend_->flush();
}

std::chrono::nanoseconds io_driver::idle_for() const noexcept {
    if (backend_->free_poll()) return std::chrono::nanoseconds::max();
    const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    return std::chrono::nanoseconds(now - last_turn_ns_.load(std::memory_order_relaxed));
}

void io_driver::ready(scheduled_io* s, std::uint32_t bits) noexcept {
    if (s == signal_sio_.load(std::memory_order_acquire)) {
        if (!(bits & io_readable)) return;
#if BLITZ_FAULTS
        if (io_fault(&testing::runtime_faults::io_signal_no_dispatch)) {  // O13's control
            signal::detail::drain(s->fd());
            return;
        }
#endif
        signal::detail::dispatch(s->fd());
        return;
    }
    s->set_ready(bits);
}

void io_driver::enable_signals() {
    lock_guard once(signal_mu_);
    if (signal_sio_.load(std::memory_order_relaxed)) return;
    const int fd = ::fcntl(signal::detail::shared_fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "blitz: signal eventfd");
    scheduled_io* s;
    try {
        s = add(fd, true);
    } catch (...) {
        ::close(fd);
        throw;
    }
    signal_fd_ = fd;
    // release: ready() that sees the block sees it registered
    signal_sio_.store(s, std::memory_order_release);
    // A delivery between the handler's install and this registration wrote the eventfd before
    // the registration could see it: look once now.
    signal::detail::dispatch(fd);
}

void io_driver::shutdown() noexcept {
    // set_ready takes the block's own mutex and wakes with no driver lock held: the wakers
    // only schedule tasks.
    regs_.shutdown();
    if (scheduled_io* s = signal_sio_.exchange(nullptr, std::memory_order_acq_rel)) {
        remove(s);
        lock_guard l(signal_mu_);
        ::close(std::exchange(signal_fd_, -1));
    }
    {
        lock_guard l(slab_.mu());
        slab_.shut_down();
    }
    drain_ops();
}

// ---- completion operations ----

io_op_state* io_driver::start(scheduled_io* s, io_op_kind kind, owned_buffer& buf, waker& w) {
    lock_guard l(slab_.mu());
    if (slab_.shut() || slab_.of(s).closing) return nullptr;
    io_op_state* op = slab_.alloc(s, kind, -1);
    op->buf = std::move(buf);
    op->w = std::move(w);
    if (kind == io_op_kind::recv && slab_.of(s).recv_busy &&
        slab_.of(s).recv_busy->kind == io_op_kind::recv_multishot && !slab_.of(s).deferred_head) {
        // The descriptor's pooled receive holds the kernel side: take what it queued, or end it
        // (its final completion then starts this one behind the buffers it still queues).
        if (const std::size_t k = s->received().take(op->buf.data(), op->buf.capacity())) {
            op->w.reset();
            op->from_unread = true;
            op->result = static_cast<int>(k);
            op->phase.store(io_op_state::done, std::memory_order_release);
            return op;
        }
        if (!slab_.of(s).recv_busy->cancel_sent) {
            slab_.of(s).recv_busy->cancel_sent = true;
            cancel_op(slab_.of(s).recv_busy);
        }
    }
    if (kind == io_op_kind::recv) {
        // One receive of a descriptor in the kernel at a time: a later one waits until the
        // earlier one settled, so bytes an abandoned receive got late are returned before
        // anything newer (R4).
        if (slab_.of(s).recv_busy) {
            op->deferred = true;
            if (slab_.of(s).deferred_tail) {
                slab_.of(s).deferred_tail->qnext = op;
            } else {
                slab_.of(s).deferred_head = op;
            }
            slab_.of(s).deferred_tail = op;
            return op;
        }
        if (const std::size_t k = s->received().take(op->buf.data(), op->buf.capacity())) {
            op->w.reset();  // the caller sees `done` at once and does not suspend
            op->from_unread = true;
            op->result = static_cast<int>(k);
            op->phase.store(io_op_state::done, std::memory_order_release);
            return op;
        }
        slab_.of(s).recv_busy = op;
        s->set_recv_pending(true);
    }
    submit_op(op);  // under the operation lock: a shutdown or close cancels only submitted states
    return op;
}

io_op_state* io_driver::start_file(io_op_kind kind, const io_file_args& a, owned_buffer& buf,
                                   waker& w) {
    lock_guard l(slab_.mu());
    if (slab_.shut()) return nullptr;
    io_op_state* op = slab_.alloc(nullptr, kind, a.fd);
    op->file = a;
    op->buf = std::move(buf);
    op->w = std::move(w);
    // seq_cst, before the kernel has it: a worker about to park sees it and parks in the driver
    registered_.fetch_add(1, std::memory_order_seq_cst);
    submit_op(op);
    return op;
}

void io_driver::complete_locked(io_op_state* op, int res, std::vector<waker>& wakes) {
    op->result = res;
    wakes.push_back(std::move(op->w));
    op->phase.store(io_op_state::done, std::memory_order_release);
}

void io_driver::promote_locked(scheduled_io* s, std::vector<waker>& wakes) {
    while (io_op_state* d = slab_.of(s).deferred_head) {
        slab_.of(s).deferred_head = d->qnext;
        if (!slab_.of(s).deferred_head) slab_.of(s).deferred_tail = nullptr;
        d->qnext = nullptr;
        d->deferred = false;
        if (slab_.shut() || slab_.of(s).closing) {
            complete_locked(d, -ECANCELED, wakes);
        } else if (const std::size_t k = s->received().take(d->buf.data(), d->buf.capacity())) {
            d->from_unread = true;
            complete_locked(d, static_cast<int>(k), wakes);
        } else {
            slab_.of(s).recv_busy = d;
            submit_op(d);
            return;
        }
    }
}

void io_driver::completed(io_op_state* op, int res) noexcept {
    waker w = std::move(op->w);  // before complete(): then the awaiter may free the state
    if (op->complete(res)) {
#if BLITZ_FAULTS
        if (io_fault(&testing::runtime_faults::io_leak_completion_ref)) {
            // O3's control: the reference is kept for good (reachable, so LeakSanitizer stays
            // quiet and the checker's own count is the verdict).
            static detail::mutex mu;
            static std::vector<waker> kept;
            w.wake_by_ref();
            lock_guard l(mu);
            kept.push_back(std::move(w));
            return;
        }
#endif
        std::move(w).wake();
        return;
    }
    settle(op);  // orphaned: nobody will take the result
    free_op(op);
}

long io_driver::finish(io_op_state* op, owned_buffer& buf) noexcept {
    const long r = op->result;
    buf = std::move(op->buf);
    free_op(op);
    return r;
}

void io_driver::abandon(io_op_state* op) noexcept {
    bool free_now = false;  // O6's control only
    {
        lock_guard l(slab_.mu());
        if (op->deferred) {
            // Never reached the kernel: unlink it from its descriptor's queue and free it.
            scheduled_io* s = op->sio;
            io_op_state** link = &slab_.of(s).deferred_head;
            io_op_state* before = nullptr;
            while (*link != op) {
                before = *link;
                link = &(*link)->qnext;
            }
            *link = op->qnext;
            if (slab_.of(s).deferred_tail == op) slab_.of(s).deferred_tail = before;
            op->deferred = false;
            op->result = -ECANCELED;
            op->phase.store(io_op_state::done, std::memory_order_relaxed);
        } else {
            if (op->orphan()) {
                // The completion is still to come: cancel, and let the driver settle and free.
                slab_.orphaned();
                if (!op->cancel_sent) {
                    op->cancel_sent = true;
                    cancel_op(op);
                }
#if BLITZ_FAULTS
                // O6's control: the state and its buffer are freed now, before the kernel's
                // final completion (which then names a reused state, or writes freed memory).
                free_now = io_fault(&testing::runtime_faults::io_free_op_on_cancel);
#endif
                if (!free_now) return;
            }
        }
    }
    // Completed (or never started), but the task stopped before it took the result.
    if (!free_now) settle(op);
    free_op(op);
}

void io_driver::settle(io_op_state* op) noexcept {
    if (op->kind == io_op_kind::file_open && op->result >= 0) {
        ::close(op->result);  // an open nobody waits for any more: its descriptor is nobody's
        return;
    }
    if (op->kind != io_op_kind::recv || op->result <= 0) return;  // a send's bytes are sent
#if BLITZ_FAULTS
    if (fault_io_drop_orphan_data()) return;  // O5's control
#endif
    // Bytes taken from the kept ones go back in front of the rest; bytes from the kernel are
    // newer than every kept byte (one receive in the kernel at a time).
    op->sio->received().keep(op->buf.data(), static_cast<std::size_t>(op->result), op->from_unread);
    op->sio->set_ready(io_readable);  // a reader waiting for the kernel now has bytes here
    if (!op->from_unread) {
        orphan_bytes_.fetch_add(static_cast<std::uint64_t>(op->result), std::memory_order_relaxed);
    }
}

void io_driver::free_op(io_op_state* op) noexcept {
    owned_buffer dead = std::move(op->buf);  // freed outside the lock
    scheduled_io* s = op->sio;
    int close_fd = -1;
    bool readers = false;
    std::vector<waker> wakes;
    {
        lock_guard l(slab_.mu());
        if (!s) {
            registered_.fetch_sub(1, std::memory_order_seq_cst);  // a file operation
        } else if (descriptor_ops& d = slab_.of(s); d.recv_busy == op) {
            d.recv_busy = nullptr;
            promote_locked(s, wakes);
            if (!d.recv_busy) {
                s->set_recv_pending(false);
                readers = true;  // plain reads held back by the receive may go on
            }
        }
        close_fd = slab_.release(op);  // the last operation of a closed descriptor closes it
    }
    for (waker& w : wakes) std::move(w).wake();
    if (readers) s->set_ready(io_readable);
    if (close_fd >= 0) close_now(s, close_fd);
}

void io_driver::close(scheduled_io* s, int fd) noexcept {
    std::vector<waker> wakes;
    bool now = false;
    std::deque<int> queued;  // a listener's accepted connections nobody took
    {
        lock_guard l(slab_.mu());
        // Under the lock: once it is let go, the last operation's completion may close and
        // free `s` on the thread that reaps it.
        queued = s->received().take_accepted_all();
        if (slab_.close(s, fd)) {
            now = true;
        } else {
#if BLITZ_FAULTS
            if (io_fault(&testing::runtime_faults::io_close_immediately))
                ::close(fd);  // O7's control: closed twice
#endif
            promote_locked(s, wakes);  // queued receives end with ECANCELED
            for (io_op_state* op = slab_.live(); op; op = op->next) {
                if (op->sio == s && !op->cancel_sent && !op->deferred &&
                    op->phase.load(std::memory_order_relaxed) != io_op_state::done) {
                    op->cancel_sent = true;
                    cancel_op(op);
                }
            }
        }
    }
    for (waker& w : wakes) std::move(w).wake();
    for (const int a : queued) ::close(a);  // reset, as the kernel's queue would be
    if (now) close_now(s, fd);
}

void io_driver::close_now(scheduled_io* s, int fd) noexcept {
    remove(s);  // before close: the number may be reused at once
#if BLITZ_FAULTS
    if (fault_io_leak_at_shutdown()) return;  // O12's control leaks the descriptor
#endif
    ::close(fd);
}

void io_driver::cancel_in_kernel_locked(int ring, bool again) noexcept {
    for (io_op_state* op = slab_.live(); op; op = op->next) {
        if (op->ring != ring || op->deferred ||
            op->phase.load(std::memory_order_relaxed) == io_op_state::done) {
            continue;  // another ring's, never in the kernel, or its awaiter has the result
        }
        if (!op->cancel_sent || again) {
            op->cancel_sent = true;
            cancel_op(op);
        }
    }
}

void io_driver::drain_ops() noexcept {
    using namespace std::chrono;
    const auto start = steady_clock::now();
    auto last_cancel = start;
    for (;;) {
        {
            lock_guard l(slab_.mu());
            std::uint64_t shared = 0;
            for (io_op_state* op = slab_.live(); op; op = op->next) shared += op->ring < 0 ? 1 : 0;
            if (shared == 0) return;
            const auto now = steady_clock::now();
            if (now - start > seconds(30)) {
                std::fprintf(stderr,
                             "blitz: %llu I/O operations did not complete 30 s after shutdown "
                             "cancelled them; their memory is kept\n",
                             static_cast<unsigned long long>(slab_.in_flight()));
                return;
            }
            // Every operation gets a cancel now; one the kernel could not cancel yet (it was
            // running) gets another every 100 ms.
            const bool again = now - last_cancel > milliseconds(100);
            if (again) last_cancel = now;
            // A worker's own ring is left out: its owner cancelled and reaped it before exiting
            // (only a drain that gave up leaves one, and only the owner could cancel it).
            cancel_in_kernel_locked(-1, again);
        }
        if (try_lock()) {
            turn(milliseconds(10));
            unlock();
        } else {
            std::this_thread::sleep_for(milliseconds(1));
        }
    }
}

// ---- pooled receives (R7) ----

long io_driver::pooled_attempt(scheduled_io* s, int fd, pooled_buffer& out,
                               owned_buffer& heap) noexcept {
    try {
        if (s->received().take_pooled(out)) return static_cast<long>(out.size());
        {
            lock_guard l(slab_.mu());
            // Again under the lock that buffers are queued under: the multishot receive may
            // have queued its last buffers and ended since the look above, and nothing newer
            // (its end, a heap read from the kernel) may overtake them.
            if (s->received().take_pooled(out)) return static_cast<long>(out.size());
            // The pool of the ring the receive will run on (the caller's own, if it has one).
            buffer_pool* own = rings_.own_pool(this);
            if (const auto step =
                    multishot_step_locked(s, io_op_kind::recv_multishot, own ? own : pool_)) {
                return *step;
            }
        }
        // No pool, or every buffer is out: a readiness receive into a heap buffer.
        if (heap.capacity() == 0) heap = owned_buffer(pool_size_);
        const ssize_t r = ::recv(fd, heap.data(), heap.capacity(), 0);
        if (r < 0) return -errno;
        heap.resize(static_cast<std::size_t>(r));
        out = pooled_buffer(std::move(heap));
        return r;
    } catch (const std::bad_alloc&) {
        return -ENOMEM;
    }
}

std::optional<long> io_driver::multishot_step_locked(scheduled_io* s, io_op_kind kind,
                                                     buffer_pool* pool) {
    if (slab_.of(s).end_set) {
        slab_.of(s).end_set = false;
        return slab_.of(s).end;  // what ended the multishot operation (0, ECONNRESET, EMFILE, ...)
    }
    if (slab_.shut() || slab_.of(s).closing) return -ECANCELED;
    if (slab_.of(s).recv_busy) return -EAGAIN;  // our multishot operation, or another receive
    if (kind == io_op_kind::recv_multishot) {
        if (!pool || pool_broken_ || pool->out() >= pool->count()) {
            ++pool_fallbacks_;
            return std::nullopt;  // no free buffer: the caller reads by syscall
        }
        ++pool_arms_;
    }
    io_op_state* op = slab_.alloc(s, kind, -1);
    slab_.of(s).recv_busy = op;
    s->set_recv_pending(true);
    submit_op(op);
    return -EAGAIN;  // the driver wakes the readers when it queues something
}

long io_driver::span_attempt(scheduled_io* s, int fd, void* data, std::size_t n) noexcept {
    buffer_pool* pool = rings_.own_pool(this);
    if (pool && n != 0) {
        if (const std::size_t k = s->received().take(data, n)) return static_cast<long>(k);
        lock_guard l(slab_.mu());
        // Again under the lock buffers are queued under (see pooled_attempt).
        if (const std::size_t k = s->received().take(data, n)) return static_cast<long>(k);
        if (const auto step = multishot_step_locked(s, io_op_kind::recv_multishot, pool)) {
            return *step;
        }
    } else if (const long k = io_take_unread(s, data, n)) {
        return k;  // R4's kept bytes, or -EAGAIN while a completion receive may leave some
    }
    const ssize_t k = ::recv(fd, data, n, 0);
    return k < 0 ? -errno : k;
}

long io_driver::accept_attempt(scheduled_io* s, int fd) noexcept {
    if (const int a = s->received().take_accepted(); a >= 0) return a;
    unsigned own = 0;
    // Worker rings need Linux 6.0 (SINGLE_ISSUER), which has multishot accept (5.19).
    if (rings_.own(this, own)) {
        lock_guard l(slab_.mu());
        // Again under the lock descriptors are queued under (see pooled_attempt).
        if (const int a = s->received().take_accepted(); a >= 0) return a;
        return *multishot_step_locked(s, io_op_kind::accept_multishot, nullptr);
    }
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    return c < 0 ? -errno : c;
}

void io_driver::accepted(io_op_state* op, int res, bool more) noexcept {
    scheduled_io* s = op->sio;
    bool wake = false;
    int stray = -1;
    {
        lock_guard l(slab_.mu());
        if (res >= 0) {
            if (slab_.of(s).closing || slab_.shut()) {
                stray = res;  // nobody will accept it: its connection is reset
            } else {
                s->received().push_accepted(res);
                wake = true;
                // Backpressure, as for pooled receives: a listener whose task does not accept
                // gets its accept paused once this many connections wait (the kernel's backlog
                // holds the rest); its next accept on an empty queue re-arms it.
                if (more && !op->cancel_sent && s->received().accepted() >= pool_queue_) {
                    op->cancel_sent = true;
                    cancel_op(op);
                }
            }
        } else if (!more && res != -ECANCELED) {
            slab_.of(s).end_set = true;  // the next accept reports it, and the one after re-arms
            slab_.of(s).end = res;
        }
    }
    if (stray >= 0) ::close(stray);
    if (!more) {
        free_op(op);  // wakes the waiters: the accept is no longer pending
    } else if (wake) {
        s->wake_readers();
    }
}

void io_driver::multishot(io_op_state* op, int res, int buffer, bool more) noexcept {
    if (op->kind == io_op_kind::accept_multishot) {
        accepted(op, res, more);
        return;
    }
    scheduled_io* s = op->sio;
    buffer_pool* pool = op->ring >= 0 ? rings_.pool(static_cast<unsigned>(op->ring)) : pool_;
    bool wake = false;
    bool drop = false;
    {
        lock_guard l(slab_.mu());
        if (buffer >= 0) {
            pool->taken();
            ++pool_chunks_;
            if (res > 0 && !slab_.of(s).closing && !slab_.shut()) {
                s->received().push_chunk(pool, static_cast<std::uint16_t>(buffer),
                                         static_cast<std::uint32_t>(res));
                wake = true;
                // Backpressure: a reader that does not keep up gets its receive paused once
                // this many buffers wait; its next read on an empty queue re-arms it.
                if (more && !op->cancel_sent && s->received().chunks() >= pool_queue_) {
                    op->cancel_sent = true;
                    cancel_op(op);
                }
            } else {
                drop = true;
            }
        }
        if (!more) {
            if (res == -ENOBUFS) {
                // The ring ran dry. The next pooled read re-arms the receive when a buffer is
                // back, or reads into a heap buffer meanwhile.
                ++pool_enobufs_;
#if BLITZ_FAULTS
                if (io_fault(&testing::runtime_faults::io_no_multishot_rearm)) {
                    slab_.of(s).end_set = true;  // O11's control: ends the stream instead
                    slab_.of(s).end = 0;
                }
#endif
            } else if (res == -EINVAL) {
                pool_broken_ = true;  // no multishot receive here (Linux < 6.0): heap reads
            } else if (res <= 0 && res != -ECANCELED) {
                slab_.of(s).end_set = true;  // end of stream, or the socket's error
                slab_.of(s).end = res;
            }
        }
    }
    if (drop) pool->release(static_cast<std::uint16_t>(buffer));
    if (!more) {
        free_op(op);  // wakes the readers: the receive is no longer pending
    } else if (wake) {
        s->wake_readers();
    }
}

io_driver_stats io_driver::stats() const noexcept {
    io_driver_stats st;
    st.turns = turns_.load(std::memory_order_relaxed);
    st.events = events_.load(std::memory_order_relaxed);
    st.registrations = regs_.registrations();
    st.blocks = regs_.blocks();
    st.live = registered_.load(std::memory_order_relaxed);
    const io_syscall_counts& c = backend_->counts;
    st.waits = c.waits.load(std::memory_order_relaxed);
    st.submits = c.submits.load(std::memory_order_relaxed);
    st.wakes = c.wakes.load(std::memory_order_relaxed);
    st.wake_reads = c.wake_reads.load(std::memory_order_relaxed);
    {
        lock_guard l(slab_.mu());
        st.ops = slab_.started();
        st.ops_in_flight = slab_.in_flight();
        st.ops_orphaned = slab_.orphans();
        st.deferred_closes = slab_.deferred_closes();
        st.pool_arms = pool_arms_;
        st.pool_chunks = pool_chunks_;
        st.pool_enobufs = pool_enobufs_;
        st.pool_fallbacks = pool_fallbacks_;
    }
    if (pool_) {
        st.pool_buffers = pool_->count();
        st.pool_out = pool_->out();
    }
    st.orphan_bytes_kept = orphan_bytes_.load(std::memory_order_relaxed);
    st.socket_busy_poll_set = busy_poll_set_.load(std::memory_order_relaxed);
    st.socket_busy_poll_failed = busy_poll_failed_.load(std::memory_order_relaxed);
    if (const int e = busy_poll_errno_.load(std::memory_order_relaxed); e != 0) {
        st.socket_busy_poll_error = "SO_BUSY_POLL: " + errno_text(e);
    }
    st.stale_completions = c.stale.load(std::memory_order_relaxed);
    rings_.add_stats(st);
    return st;
}

// ---- the rings per worker (worker_rings.hpp) ----

void io_driver::create_worker_rings(unsigned workers, unsigned entries) {
    rings_.create(*backend_, workers, entries, pool_count_, pool_size_);
    nrings_ = rings_.count();
}

void io_driver::attach_worker(unsigned index) noexcept { (void)rings_.attach(index, this); }

void io_driver::submit_op(io_op_state* op) noexcept {
    if (rings_.submit(this, op)) return;
    op->ring = -1;
    backend_->submit(op);
}

void io_driver::cancel_op(io_op_state* op) noexcept {
    if (op->ring < 0) {
        backend_->cancel(op);
    } else {
        rings_.cancel(this, op);
    }
}

std::size_t io_driver::park_own(std::chrono::nanoseconds timeout, bool watch_shared) noexcept {
    unsigned i;
    if (!rings_.own(this, i)) return 0;
    bool fired = false;
    // The shared ring's descriptor: a completion posted there ends the sleep of the worker that
    // holds the driver's lock (worker rings exist only over an io_uring shared ring).
    std::size_t n =
        rings_.park_own(i, timeout, watch_shared ? backend_->completion_fd() : -1, *this, fired);
    if (n) events_.fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic
    if (fired) n += turn(std::chrono::nanoseconds::zero());
    return n;
}

std::size_t io_driver::poll_own() noexcept {
    unsigned i;
    if (!rings_.own(this, i)) return 0;
    const std::size_t n = rings_.poll_own(i, *this);
    if (n) events_.fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic
    // A completion may have started the next queued receive of its descriptor (promote_locked):
    // staged on this ring, it goes out with the next look (the next tick's start, or the park).
    return n;
}

void io_driver::detach_worker(unsigned index) noexcept {
    unsigned i;
    if (!rings_.own(this, i) || i != index) return;
    using namespace std::chrono;
    const auto start = steady_clock::now();
    for (;;) {
        {
            lock_guard l(slab_.mu());
            cancel_in_kernel_locked(static_cast<int>(index), false);
        }
        (void)poll_own();  // the mailbox too: a cancel handed over is just as good
        if (rings_.in_flight(index) == 0) break;
        if (steady_clock::now() - start > seconds(30)) {
            std::fprintf(stderr,
                         "blitz: worker %u: %llu I/O operations on its ring did not complete 30 s "
                         "after it cancelled them; their memory is kept\n",
                         index, static_cast<unsigned long long>(rings_.in_flight(index)));
            break;
        }
        const std::size_t n = rings_.wait_own(index, milliseconds(10), *this);
        if (n) events_.fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic
    }
    rings_.detach();
}

// ---- the public side (blitz/detail/io_api.hpp) ----

io_driver& current_io() {
    const runtime_context* r = current_runtime();
    if (!r) {
        throw std::logic_error(
            "blitz: sockets need a runtime: create and await them inside a blitz task");
    }
    if (!r->io) {
        throw std::logic_error("blitz: this runtime has no I/O driver (config io_backend = none)");
    }
    return *r->io;
}

scheduled_io* io_register(io_driver& d, int fd) { return d.add(fd); }
void io_deregister(io_driver& d, scheduled_io* s) noexcept { d.remove(s); }
io_ready_event io_poll_ready(const scheduled_io* s, io_direction dir) noexcept {
    return s->poll(dir);
}
void io_clear_ready(scheduled_io* s, io_ready_event ev) noexcept { s->clear(ev); }
bool io_wait(scheduled_io* s, io_direction dir, wait_node& node, waker w) {
    if (!s->wait(dir, node, std::move(w))) return false;
    if (s->lazy) s->lazy->wait_armed(s, dir);
    return true;
}
bool io_speculative_reads(const io_driver& d) noexcept { return d.speculative_reads(); }
void io_cancel_wait(scheduled_io* s, wait_node& node) noexcept { s->cancel_wait(node); }
std::shared_ptr<io_driver> io_share(io_driver& d) { return d.shared_from_this(); }
void io_close(io_driver& d, scheduled_io* s, int fd) noexcept { d.close(s, fd); }
long io_take_unread(scheduled_io* s, void* data, std::size_t n) noexcept {
    // Pending first: a receive that settles between the two looks would otherwise leave its
    // bytes behind while the caller reads newer ones from the kernel. Seen not pending, no
    // receive is in the kernel (the caller is the stream's one reader), so no bytes can be
    // kept after this look.
    const bool pending = s->recv_pending();
    if (const std::size_t k = s->received().take(data, n)) return static_cast<long>(k);
    return pending ? -EAGAIN : 0;
}
bool io_completion_mode(const io_driver& d) noexcept { return d.completion_ops(); }
io_driver* current_io_if_any() noexcept {
    const runtime_context* r = current_runtime();
    return r ? r->io : nullptr;
}
bool io_file_op_supported(const io_driver& d, io_op_kind kind) noexcept {
    return d.runs_file_op(kind);
}
io_op_state* io_file_op_start(io_driver& d, io_op_kind kind, const io_file_args& a,
                              owned_buffer& buf, waker& w) {
    return d.start_file(kind, a, buf, w);
}
io_op_state* io_op_start(io_driver& d, scheduled_io* s, io_op_kind kind, owned_buffer& buf,
                         waker& w) {
    return d.start(s, kind, buf, w);
}
bool io_op_done(const io_op_state* op) noexcept { return op->finished(); }
long io_op_finish(io_driver& d, io_op_state* op, owned_buffer& buf) noexcept {
    return d.finish(op, buf);
}
void io_op_abandon(io_driver& d, io_op_state* op) noexcept { d.abandon(op); }
long io_pooled_attempt(io_driver& d, scheduled_io* s, int fd, pooled_buffer& out,
                       owned_buffer& heap) noexcept {
    return d.pooled_attempt(s, fd, out, heap);
}
long io_span_attempt(io_driver& d, scheduled_io* s, int fd, void* data, std::size_t n) noexcept {
    return d.span_attempt(s, fd, data, n);
}
long io_accept_attempt(io_driver& d, scheduled_io* s, int fd) noexcept {
    return d.accept_attempt(s, fd);
}

#if BLITZ_FAULTS
bool io_fault(bool testing::runtime_faults::* knob) noexcept {
    const runtime_context* r = current_runtime();
    return r && r->cfg && r->cfg->debug.*knob;
}
bool fault_io_drop_orphan_data() noexcept {
    return io_fault(&testing::runtime_faults::io_drop_orphan_data);
}
bool fault_io_no_msg_nosignal() noexcept {
    return io_fault(&testing::runtime_faults::io_no_msg_nosignal);
}
bool fault_io_leak_at_shutdown() noexcept {
    const runtime_context* r = draining_runtime();
    return r && r->cfg && r->cfg->debug.io_leak_at_shutdown;
}
bool fault_io_eof_as_error() noexcept {
    return io_fault(&testing::runtime_faults::io_eof_as_error);
}
#endif

}  // namespace blitz::detail
