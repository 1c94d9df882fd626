// SPDX-License-Identifier: MIT
#include "io/io_driver.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "blitz/detail/faults.hpp"
#include "io/epoll_backend.hpp"
#include "io/op_state.hpp"
#include "io/scheduled_io.hpp"
#include "io/signal_dispatch.hpp"
#include "io/uring_backend.hpp"

namespace blitz::detail {

std::string errno_text(int e) {
    const char* name = strerrorname_np(e);
    return std::string(strerror(e)) + " (" + (name ? name : std::to_string(e)) + ")";
}

namespace {

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
    d->ops_.configure(d->backend_->pool(), cfg.io_pool_buffer_size, cfg.io_pool_queue);
    d->pool_count_ = cfg.io_pool_buffers;
    d->file_ops_ = cfg.fs_io_uring;
    d->batched_sends_ = cfg.io_batched_sends;
    d->ops_.set_link_timeouts(cfg.io_linked_timeouts && !cfg.start_paused);
    d->ops_.set_send_zc_threshold(d->backend_->runs(io_op_kind::send_zc) ? cfg.io_send_zc_threshold
                                                                         : 0);
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
        if (rings_.count() != 0 && !eager) {
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
    ops_.shutdown();
}

void io_driver::close_now(scheduled_io* s, int fd) noexcept {
    remove(s);  // before close: the number may be reused at once
#if BLITZ_FAULTS
    if (fault_io_leak_at_shutdown()) return;  // O12's control leaks the descriptor
#endif
    ::close(fd);
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
    ops_.add_stats(st);
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
    rings_.create(*backend_, workers, entries, pool_count_, ops_.pool_buffer_size());
}

void io_driver::attach_worker(unsigned index) noexcept { (void)rings_.attach(index); }

std::size_t io_driver::park_own(std::chrono::nanoseconds timeout, bool watch_shared) noexcept {
    unsigned i;
    if (!rings_.own(i)) return 0;
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
    if (!rings_.own(i)) return 0;
    const std::size_t n = rings_.poll_own(i, *this);
    if (n) events_.fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic
    // A completion may have started the next queued receive of its descriptor (promote_locked):
    // staged on this ring, it goes out with the next look (the next tick's start, or the park).
    return n;
}

void io_driver::detach_worker(unsigned index) noexcept {
    unsigned i;
    if (!rings_.own(i) || i != index) return;
    using namespace std::chrono;
    const auto start = steady_clock::now();
    for (;;) {
        ops_.cancel_ring(index);
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

}  // namespace blitz::detail
