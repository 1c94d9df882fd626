// SPDX-License-Identifier: MIT
#include "io/io_driver.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "blitz/detail/context.hpp"
#include "blitz/detail/faults.hpp"
#include "io/epoll_backend.hpp"
#include "io/scheduled_io.hpp"
#include "io/uring_backend.hpp"
#include "task/context_internal.hpp"

namespace blitz::detail {

namespace {

std::string errno_text(int e) {
    const char* name = strerrorname_np(e);
    return std::string(strerror(e)) + " (" + (name ? name : std::to_string(e)) + ")";
}

}  // namespace

std::shared_ptr<io_driver> io_driver::create(const config& cfg, std::string& reason) {
    if (cfg.io_backend == io_backend_kind::none) {
        reason = "none: io_backend = none";
        return nullptr;
    }
    std::unique_ptr<io_backend> b;
    if (cfg.io_backend != io_backend_kind::epoll) {
        int fake = 0;
        bool enosys_only = false;
#if BLITZ_FAULTS
        fake = cfg.debug.io_uring_setup_errno;
        enosys_only = cfg.debug.io_fallback_on_enosys_only;
#endif
        uring_probe_result why;
        b = uring_backend::create(cfg.io_entries, fake, why);
        if (b) {
            reason = "io_uring: " + std::string(cfg.io_backend == io_backend_kind::io_uring
                                                    ? "forced by io_backend = io_uring"
                                                    : "available (automatic selection)");
        } else {
            const std::string said = "io_uring unavailable: " + why.what + " failed with " +
                                     errno_text(why.error) +
                                     "; kernel.io_uring_disabled = " + io_uring_disabled_setting();
            // O1's negative control: the Eio bug, falling back only on ENOSYS.
            if (cfg.io_backend == io_backend_kind::io_uring ||
                (enosys_only && why.error != ENOSYS)) {
                throw config_error("blitz::config: io_backend = io_uring, but " + said);
            }
            reason = "epoll: " + said;
        }
    } else {
        reason = "epoll: forced by io_backend = epoll";
    }
    if (!b) b = std::make_unique<epoll_backend>(cfg.io_entries);
    return std::shared_ptr<io_driver>(new io_driver(std::move(b)));
}

io_driver::~io_driver() {
    // Nobody can reach the driver any more (the runtime and every socket let go of it).
    lock_guard l(reg_mu_);
    while (scheduled_io* s = live_) {
        live_ = s->live_next;
        delete s;
    }
}

scheduled_io* io_driver::add(int fd) {
    auto* s = new scheduled_io(fd);
    {
        lock_guard l(reg_mu_);
        s->live_next = live_;
        if (live_) live_->live_prev = s;
        live_ = s;
        ++registrations_;
        ++live_count_;
        if (shut_down_) s->set_ready(io_shutdown);
    }
    try {
        backend_->add(s);
        registered_.fetch_add(1, std::memory_order_seq_cst);
    } catch (...) {
        lock_guard l(reg_mu_);
        if (s->live_prev) s->live_prev->live_next = s->live_next;
        if (s->live_next) s->live_next->live_prev = s->live_prev;
        if (live_ == s) live_ = s->live_next;
        --live_count_;
        delete s;
        throw;
    }
    return s;
}

void io_driver::remove(scheduled_io* s) noexcept {
    registered_.fetch_sub(1, std::memory_order_seq_cst);
    backend_->remove(s);
    lock_guard l(reg_mu_);
    s->user_released = true;
    // epoll: an event taken by a wait in progress may still name s; the next turn frees it.
    if (backend_->releases_at_once()) s->backend_released = true;
    s->next_pending = pending_;
    pending_ = s;
}

void io_driver::released(scheduled_io* s) noexcept {
    lock_guard l(reg_mu_);
    s->backend_released = true;  // on pending_ already: remove() comes first
}

void io_driver::free_released() noexcept {
    lock_guard l(reg_mu_);
    scheduled_io** link = &pending_;
    while (scheduled_io* s = *link) {
        if (!s->backend_released) {
            link = &s->next_pending;
            continue;
        }
        *link = s->next_pending;
        if (s->live_prev) s->live_prev->live_next = s->live_next;
        if (s->live_next) s->live_next->live_prev = s->live_prev;
        if (live_ == s) live_ = s->live_next;
        --live_count_;
        delete s;
    }
}

std::size_t io_driver::turn(std::chrono::nanoseconds timeout) noexcept {
    turns_.fetch_add(1, std::memory_order_relaxed);
    free_released();
    const std::size_t n = backend_->wait(timeout, *this);
    if (n) events_.fetch_add(n, std::memory_order_relaxed);
    if (!backend_->free_poll()) {
        last_turn_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                            std::memory_order_relaxed);
    }
    return n;
}

std::chrono::nanoseconds io_driver::idle_for() const noexcept {
    if (backend_->free_poll()) return std::chrono::nanoseconds::max();
    const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    return std::chrono::nanoseconds(now - last_turn_ns_.load(std::memory_order_relaxed));
}

void io_driver::ready(scheduled_io* s, std::uint32_t bits) noexcept { s->set_ready(bits); }

void io_driver::shutdown() noexcept {
    // set_ready takes the block's own mutex and wakes with no driver lock held: the wakers
    // only schedule tasks.
    lock_guard l(reg_mu_);
    shut_down_ = true;
    for (scheduled_io* s = live_; s; s = s->live_next) s->set_ready(io_shutdown);
}

io_driver_stats io_driver::stats() const noexcept {
    io_driver_stats st;
    st.turns = turns_.load(std::memory_order_relaxed);
    st.events = events_.load(std::memory_order_relaxed);
    {
        lock_guard l(reg_mu_);
        st.registrations = registrations_;
        st.blocks = live_count_;
    }
    st.live = registered_.load(std::memory_order_relaxed);
    const io_syscall_counts& c = backend_->counts;
    st.waits = c.waits.load(std::memory_order_relaxed);
    st.submits = c.submits.load(std::memory_order_relaxed);
    st.wakes = c.wakes.load(std::memory_order_relaxed);
    st.wake_reads = c.wake_reads.load(std::memory_order_relaxed);
    return st;
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
    return s->wait(dir, node, std::move(w));
}
void io_cancel_wait(scheduled_io* s, wait_node& node) noexcept { s->cancel_wait(node); }
std::shared_ptr<io_driver> io_share(io_driver& d) { return d.shared_from_this(); }

#if BLITZ_FAULTS
namespace {
const testing::runtime_faults* faults_here() noexcept {
    const runtime_context* r = current_runtime();
    return r && r->cfg ? &r->cfg->debug : nullptr;
}
}  // namespace
bool fault_io_drop_orphan_data() noexcept {
    const auto* f = faults_here();
    return f && f->io_drop_orphan_data;
}
bool fault_io_no_msg_nosignal() noexcept {
    const auto* f = faults_here();
    return f && f->io_no_msg_nosignal;
}
bool fault_io_leak_at_shutdown() noexcept {
    const runtime_context* r = draining_runtime();
    return r && r->cfg && r->cfg->debug.io_leak_at_shutdown;
}
bool fault_io_eof_as_error() noexcept {
    const auto* f = faults_here();
    return f && f->io_eof_as_error;
}
#endif

}  // namespace blitz::detail
