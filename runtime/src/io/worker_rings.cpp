// SPDX-License-Identifier: MIT
#include "io/worker_rings.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

#include "blitz/detail/mutex.hpp"
#include "io/io_driver.hpp"
#include "io/op_state.hpp"
#include "io/ring_mailbox.hpp"
#include "io/uring_backend.hpp"

namespace blitz::detail {

namespace {

// The sparse registered file table each worker ring gets (direct descriptors' room).
constexpr unsigned file_slots = 1024;

// The ring the calling thread owns: its set and index (a worker of one runtime at a time).
struct own_slot {
    const worker_rings* owner = nullptr;
    unsigned index = 0;
};
thread_local own_slot tl_own;

}  // namespace

struct worker_rings::ring {
    std::unique_ptr<uring_backend> r;
    ring_mailbox mail;                 // user_data of operations to cancel
    std::vector<std::uint64_t> taken;  // the owner's: the last take of `mail`
};

worker_rings::worker_rings() = default;
worker_rings::~worker_rings() = default;

void worker_rings::create(const io_backend& shared, unsigned workers, unsigned entries,
                          unsigned pool_count, unsigned pool_size) {
    if (!shared.completion_ops() || workers == 0) return;  // epoll: nothing to give a worker
    std::uint32_t file_ops = 0;
    for (unsigned k = 0; k < 32; ++k) {
        if (shared.runs(static_cast<io_op_kind>(k))) file_ops |= 1u << k;
    }
    auto rings = std::make_unique<ring[]>(workers);
    for (unsigned i = 0; i < workers; ++i) {
        uring_probe_result why;
        rings[i].r =
            uring_backend::create_worker_ring(entries, file_ops, pool_count, pool_size, why);
        if (!rings[i].r) {
            text_ = "no per-worker rings (" + why.what + " failed with " + errno_text(why.error) +
                    "): every worker uses the shared ring";
            return;
        }
    }
    const uring_backend& r0 = *rings[0].r;
    text_ = "a ring per worker for completion operations (" + std::to_string(entries) +
            " entries, SINGLE_ISSUER, " + (r0.defer_taskrun() ? "DEFER_TASKRUN" : "COOP_TASKRUN") +
            " with TASKRUN_FLAG), each entered only by its worker, on that worker's PU; a parked "
            "worker with operations in flight sleeps in its ring" +
            (r0.no_iowait() ? " (NO_IOWAIT)" : "");
    rings_ = std::move(rings);
    count_ = workers;
}

bool worker_rings::attach(unsigned index) noexcept {
    if (index >= count_) return false;
    const char* what = "";
    if (const int r = rings_[index].r->enable_here(file_slots, what); r < 0) {
        // The ring stays disabled and the worker submits to the shared ring.
        std::fprintf(stderr, "blitz: worker %u's io_uring ring: %s failed with %s\n", index, what,
                     errno_text(-r).c_str());
        return false;
    }
    tl_own = own_slot{this, index};
    return true;
}

void worker_rings::detach() noexcept { tl_own = own_slot{}; }

uring_backend* worker_rings::own(unsigned& index) const noexcept {
    if (tl_own.owner != this) return nullptr;
    index = tl_own.index;
    return rings_[index].r.get();
}

bool worker_rings::own_busy() const noexcept {
    unsigned i;
    const uring_backend* r = own(i);
    return r && r->in_flight() != 0;
}

buffer_pool* worker_rings::own_pool() const noexcept {
    unsigned i;
    const uring_backend* r = own(i);
    return r ? r->pool() : nullptr;
}

buffer_pool* worker_rings::pool(unsigned index) const noexcept { return rings_[index].r->pool(); }

bool worker_rings::submit(io_op_state* op) noexcept {
    unsigned i;
    uring_backend* r = own(i);
    // A pooled receive draws from the ring's own buffer pool: without one it stays shared.
    if (!r || (op->kind == io_op_kind::recv_multishot && !r->pool())) return false;
    op->ring = static_cast<int>(i);
    ops_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    r->submit(op);
    return true;
}

void worker_rings::cancel(io_op_state* op) noexcept {
    unsigned i;
    if (uring_backend* r = own(i); r && static_cast<int>(i) == op->ring) {
        r->cancel(op);
        return;
    }
    // Only the owner may submit to its ring. The generation goes with the request, so a state
    // reused meanwhile is not cancelled by mistake (the kernel finds no match).
    ring& w = rings_[static_cast<unsigned>(op->ring)];
    w.mail.post(uring_backend::user_data_of(op));
    handed_cancels_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    w.r->wake();  // the owner may sleep in its ring: it empties the mailbox when it wakes
}

void worker_rings::wake(unsigned index) noexcept {
    if (index < count_) rings_[index].r->wake();
}

void worker_rings::take_mail(ring& w) noexcept {
    if (!w.mail.take(w.taken)) return;  // no lock when nothing was posted
    for (const std::uint64_t ud : w.taken) w.r->cancel_user_data(ud);
}

std::size_t worker_rings::poll_own(unsigned index, io_event_sink& sink) noexcept {
    ring& w = rings_[index];
    take_mail(w);
    return w.r->poll_own(sink);
}

std::size_t worker_rings::park_own(unsigned index, std::chrono::nanoseconds timeout, int watch_fd,
                                   io_event_sink& sink, bool& watch_fired) noexcept {
    ring& w = rings_[index];
    take_mail(w);
    watch_fired = false;
    // What completed since the tick's look, from memory: the wait below enters the kernel (and
    // submits what is staged) only when there is nothing.
    if (const std::size_t n = w.r->reap_own(sink)) return n;
    if (watch_fd >= 0) w.r->watch(watch_fd);
    const std::size_t n = w.r->wait_own(timeout, sink);
    watch_fired = w.r->take_watch_fired() && watch_fd >= 0;
    return n;
}

std::size_t worker_rings::wait_own(unsigned index, std::chrono::nanoseconds timeout,
                                   io_event_sink& sink) noexcept {
    return rings_[index].r->wait_own(timeout, sink);
}

std::uint64_t worker_rings::in_flight(unsigned index) const noexcept {
    return rings_[index].r->in_flight();
}

void worker_rings::add_stats(io_driver_stats& st) const noexcept {
    st.worker_ring_ops = ops_.load(std::memory_order_relaxed);
    st.worker_ring_handed_cancels = handed_cancels_.load(std::memory_order_relaxed);
    for (unsigned i = 0; i < count_; ++i) {
        const uring_backend& r = *rings_[i].r;
        if (const buffer_pool* p = r.pool()) {
            st.pool_buffers += p->count();
            st.pool_out += p->out();
        }
        const io_syscall_counts& rc = r.counts;
        st.worker_ring_enters +=
            rc.waits.load(std::memory_order_relaxed) + rc.submits.load(std::memory_order_relaxed);
        st.worker_ring_submits += rc.submits.load(std::memory_order_relaxed);
        st.worker_ring_wakes += rc.wakes.load(std::memory_order_relaxed) +
                                rc.wake_reads.load(std::memory_order_relaxed);
        st.stale_completions += rc.stale.load(std::memory_order_relaxed);
    }
}

}  // namespace blitz::detail
