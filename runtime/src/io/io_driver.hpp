// SPDX-License-Identifier: MIT
#pragma once
// io_driver: the runtime's one I/O driver over its backend (IO.md 7.2): the turn and the
// dispatch. Its parts, each with its own lock: registration_set (the descriptors' blocks),
// io_ops (completion operations, with op_slab and each descriptor's receive_queue),
// worker_rings (a ring per worker), and the backend (epoll_backend, uring_backend).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic.hpp"
#include "blitz/config.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/detail/mutex.hpp"
#include "io/backend.hpp"
#include "io/buffer_pool.hpp"
#include "io/io_ops.hpp"
#include "io/op_state.hpp"
#include "io/registration_set.hpp"
#include "io/worker_rings.hpp"

namespace blitz::detail {

class scheduled_io;
struct io_op_state;

#if BLITZ_FAULTS
// True when the calling worker's runtime has the negative control `knob` set (the I/O
// driver's controls; false on a plain thread).
bool io_fault(bool ::blitz::testing::runtime_faults::* knob) noexcept;
#endif

// Counters for runtime_metrics and the O checkers.
struct io_driver_stats {
    std::uint64_t turns = 0;          // turns taken (blocking or not)
    std::uint64_t events = 0;         // readiness events and completions dispatched
    std::uint64_t registrations = 0;  // descriptors registered so far
    std::uint64_t live = 0;           // registered and not yet deregistered
    std::uint64_t blocks = 0;         // scheduled_io blocks not yet freed (live + pending)
    std::uint64_t waits = 0, submits = 0, wakes = 0, wake_reads = 0;  // syscalls by kind
    // Completion operations (io_uring): started, in flight now, abandoned by their awaiter,
    // late received bytes kept for the next read (R4), closes deferred to the last one (R5).
    std::uint64_t ops = 0, ops_in_flight = 0, ops_orphaned = 0, orphan_bytes_kept = 0;
    std::uint64_t deferred_closes = 0;
    std::uint64_t stale_completions = 0;  // see io_syscall_counts::stale
    // Busy mode's per-worker rings: operations submitted to a worker's own ring, cancels another
    // thread handed to a ring's owner, and the rings' own io_uring_enter calls.
    std::uint64_t worker_ring_ops = 0, worker_ring_handed_cancels = 0, worker_ring_enters = 0;
    // Of those enters, the ones that submitted; and the eventfd writes and reads that woke
    // workers parked in their rings (the futex wakes they replace).
    std::uint64_t worker_ring_submits = 0, worker_ring_wakes = 0;
    // Pooled receives (R7): the pool's size and buffers out of it now; multishot receives
    // armed, buffers they filled, ends for want of a buffer (-ENOBUFS), and pooled reads that
    // found no free buffer and read into a heap buffer.
    std::uint64_t pool_buffers = 0, pool_out = 0;
    std::uint64_t pool_arms = 0, pool_chunks = 0, pool_enobufs = 0, pool_fallbacks = 0;
    std::uint64_t send_zc = 0, linked_timeouts = 0;
    // config socket_busy_poll: sockets given SO_BUSY_POLL, sockets the kernel refused, and the
    // first refusal ("SO_BUSY_POLL: Operation not permitted (EPERM)"; empty when none).
    std::uint64_t socket_busy_poll_set = 0, socket_busy_poll_failed = 0;
    std::string socket_busy_poll_error;
};

// The registrations of one runtime and the turn that reports their events.
//
// Protocol: exactly one thread at a time turns the driver (a try-lock, as Tokio, Go and Asio
// do): a parked worker blocks in it, running workers look without blocking at the start of their
// ticks. A turn frees the blocks released before it, waits for the backend's events and
// dispatches each: readiness to its descriptor's waiters (scheduled_io), completions to io_ops,
// signal deliveries to the signal streams. A worker with its own ring looks at that ring at every
// tick (poll_own) and, parked with operations in flight, sleeps in it (park_own); the one that
// also holds the lock watches the shared ring from its own.
//
// Invariants: at most one turn at a time (locked_); a block is freed only after the backend can
// no longer name it (registration_set, R6); registered_ counts registrations and file
// operations in flight, and is non-zero whenever a worker must park in the driver to see an
// event (a file completion included).
//
// Memory ordering: locked_ is taken with acquire and let go with release, so a turn sees the
// previous holder's dispatch and frees. registered_ is seq_cst: a worker that parks after a
// registration sees it and parks in the driver (the runtime's park protocol).
//
// Lifetime: shared by the runtime and by every socket registered with it, so a socket that
// outlives its runtime still deregisters into a valid driver (its waits end at shutdown).
// Thread-safety: add/remove/wake/shutdown and the operations from any thread; turn() only while
// holding the lock; the worker-ring calls on the worker's own thread.
class io_driver final : public std::enable_shared_from_this<io_driver>, private io_event_sink {
public:
    // Picks the backend `cfg` asks for (IO.md 7.4). io_backend_kind::io_uring that cannot be set
    // up throws config_error naming the errno and the io_uring_disabled setting. Returns null
    // for io_backend_kind::none. `reason` says what was chosen and why.
    static std::shared_ptr<io_driver> create(const config& cfg, std::string& reason);
    ~io_driver();
    io_driver(const io_driver&) = delete;
    io_driver& operator=(const io_driver&) = delete;

    const char* backend_name() const noexcept { return backend_->name(); }

    bool try_lock() noexcept {
        // acquire: the previous holder's dispatch and frees happen before our turn
        return !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }
    bool locked() const noexcept { return locked_.load(std::memory_order_acquire); }
    // With the lock: frees the blocks released before this turn, then waits up to `timeout` for
    // events (zero: just look) and wakes their waiters. Returns the events dispatched.
    std::size_t turn(std::chrono::nanoseconds timeout) noexcept;
    // How long since the last turn ended (any thread's); zero for backends whose zero-timeout
    // turn costs no syscall (io_uring reads its completion queue in memory).
    std::chrono::nanoseconds idle_for() const noexcept;
    // Ends a turn in progress (or makes the next one return at once).
    void wake() noexcept { backend_->wake(); }
    // Submits the operations staged since the last submission (workers call it at the end of
    // every tick, so a tick's operations cost one syscall).
    void flush() noexcept;

    // Registers `fd`. With worker rings the readiness poll is armed lazily (see
    // scheduled_io::lazy) unless `eager` (a descriptor nobody waits on, like the signal
    // eventfd, whose events the driver itself dispatches).
    scheduled_io* add(int fd, bool eager = false);
    void remove(scheduled_io* s) noexcept;
    // A task is about to wait for readiness on `s` (linked): arms a lazy poll it finds unarmed.
    void wait_armed(scheduled_io* s, io_direction dir) noexcept;
    // True when stream reads should try their receive before any readiness is known (lazy
    // polls: a read's first attempt arms its multishot receive).
    bool speculative_reads() const noexcept { return rings_.count() != 0; }
    // True while some descriptor is registered (workers then poll and sleep in the driver).
    bool has_registrations() const noexcept {
        return registered_.load(std::memory_order_seq_cst) != 0;
    }
    // Closes `fd` (registered as `s`) now, or after its last completion operation (R5).
    void close(scheduled_io* s, int fd) noexcept { ops_.close(s, fd); }
    // Runtime shutdown: every registration reports io_shutdown, so every wait ends; every
    // completion operation is cancelled and its final completion reaped before this returns
    // (R8). Call when no worker turns the driver any more.
    void shutdown() noexcept;

    // Completion operations (see blitz/detail/io_api.hpp).
    bool completion_ops() const noexcept { return backend_->completion_ops(); }
    // True when epoll runs sockets and an io_uring ring beside it runs files (automatic
    // selection in shared mode, issue 44).
    bool file_ring() const noexcept {
        return !backend_->completion_ops() && backend_->runs(io_op_kind::file_read);
    }
    io_op_state* start(scheduled_io* s, io_op_kind kind, owned_buffer& buf, waker& w) {
        return ops_.start(s, kind, buf, w);
    }
    long finish(io_op_state* op, owned_buffer& buf) noexcept { return ops_.finish(op, buf); }
    bool runs_file_op(io_op_kind kind) const noexcept { return file_ops_ && backend_->runs(kind); }
    // A file operation: counted as a registration while in flight, so workers park in the
    // driver (and reap its completion) even when no descriptor is registered.
    io_op_state* start_file(io_op_kind kind, const io_file_args& a, owned_buffer& buf, waker& w) {
        return ops_.start_file(kind, a, buf, w);
    }
    void abandon(io_op_state* op) noexcept { ops_.abandon(op); }
    long pooled_attempt(scheduled_io* s, int fd, pooled_buffer& out, owned_buffer& heap) noexcept {
        return ops_.pooled_attempt(s, fd, out, heap);
    }
    long span_attempt(scheduled_io* s, int fd, void* data, std::size_t n, bool& syscall) noexcept {
        return ops_.span_attempt(s, fd, data, n, syscall);
    }
    long accept_attempt(scheduled_io* s, int fd) noexcept { return ops_.accept_attempt(s, fd); }
    // Why pooled reads have no provided-buffer ring (empty when they have one).
    std::string pool_reason() const { return backend_->pool_reason(); }
    unsigned pool_buffer_size() const noexcept { return ops_.pool_buffer_size(); }
    int sqpoll_cpu() const noexcept { return backend_->sqpoll_cpu(); }
    bool coop_taskrun() const noexcept { return backend_->coop_taskrun(); }
    // See io_backend::run_task_work (any thread, no lock).
    void run_task_work() noexcept { backend_->run_task_work(); }

    io_driver_stats stats() const noexcept;

    // On io_uring (IO.md 7.6, issue 44): a ring per worker for completion operations (readiness
    // polls and plain threads' operations stay on the shared ring). An
    // operation runs on the ring of the worker that started it, and its completion wakes the
    // task wherever it runs by then; a cancel from another thread goes to the owner's mailbox,
    // which the owner empties at every look. Call before the workers start; a kernel that
    // refuses the rings leaves everyone on the shared ring (worker_rings_text says why).
    void create_worker_rings(unsigned workers, unsigned entries);
    // On worker `index`'s thread, first: enables its ring with that thread as the only issuer.
    void attach_worker(unsigned index) noexcept;
    // On its thread, last: cancels every operation on its ring and reaps them all.
    void detach_worker(unsigned index) noexcept;
    // The calling worker's ring: its mailbox of cancels, then its completions. Cheap when it
    // has nothing (no syscall unless the kernel flags deferred completion work).
    std::size_t poll_own() noexcept;
    // True when the calling worker's ring has operations in flight (a busy worker then keeps
    // spinning instead of parking, a parking one sleeps in its ring: only it can reap them).
    bool own_ring_busy() const noexcept { return rings_.own_busy(); }
    // True with config io_batched_sends when the calling thread is a worker with its own ring:
    // a stream's write_all then goes out as SEND operations staged on that ring, submitted with
    // the rest of the tick's operations by one io_uring_enter (INVARIANTS.md O15, R2).
    bool batched_sends() const noexcept {
        unsigned i;
        return batched_sends_ && rings_.own(i) != nullptr;
    }
    // A parked worker's sleep in its own ring, up to `timeout` (the ring's completions, a
    // wake_worker() and, with `watch_shared`, completions on the shared ring end it). With
    // `watch_shared` the caller holds the driver's lock, and a completion posted on the shared
    // ring is dispatched here too. Returns the events dispatched.
    std::size_t park_own(std::chrono::nanoseconds timeout, bool watch_shared) noexcept;
    // Ends worker `index`'s sleep in its ring (or makes its next one return at once).
    void wake_worker(unsigned index) noexcept { rings_.wake(index); }
    // "a ring per worker (...)" for io_rings, or why there is none; empty when not asked for.
    const std::string& worker_rings_text() const noexcept { return rings_.text(); }
    bool has_worker_rings() const noexcept { return rings_.count() != 0; }
    // Operations in flight on worker `index`'s own ring (0 without one); any thread.
    std::uint64_t worker_ops_in_flight(unsigned index) const noexcept {
        return index < rings_.count() ? rings_.in_flight(index) : 0;
    }

    // Signal streams (blitz/signal.hpp): registers a duplicate of the signal eventfd once, so a
    // delivery wakes this driver (and a runtime parked in it). Throws std::system_error.
    void enable_signals();

private:
    explicit io_driver(std::unique_ptr<io_backend> b);
    void ready(scheduled_io* s, std::uint32_t bits) noexcept override;
    void released(scheduled_io* s) noexcept override;
    void completed(io_op_state* op, int res) noexcept override { ops_.completed(op, res); }
    void multishot(io_op_state* op, int res, int buffer, bool more) noexcept override {
        ops_.multishot(op, res, buffer, more);
    }
    void close_now(scheduled_io* s, int fd) noexcept;
    // config socket_busy_poll: SO_BUSY_POLL on `fd` if it is a TCP or UDP socket (counted).
    void apply_socket_busy_poll(int fd) noexcept;
    friend class io_ops;  // submits, cancels, counts file operations, closes and turns

    worker_rings rings_;

    std::unique_ptr<io_backend> backend_;
    alignas(cache_line) atomic<bool> locked_{false};
    registration_set regs_;  // after backend_: its blocks go first (they hold pool buffers)
    atomic<std::uint64_t> turns_{0}, events_{0};
    atomic<std::uint64_t> registered_{0};   // add()s not yet remove()d
    atomic<std::int64_t> last_turn_ns_{0};  // steady_clock, at the end of the last turn

    // Completion operations (io_ops.hpp): after regs_ and rings_, so they go first.
    io_ops ops_{*this};
    // The signal eventfd's registration here (null until enable_signals) and its descriptor.
    atomic<scheduled_io*> signal_sio_{nullptr};
    detail::mutex signal_mu_;  // enable_signals, once
    int signal_fd_ BLITZ_GUARDED_BY(signal_mu_) = -1;
    unsigned pool_count_ = 0;      // config io_pool_buffers: each worker ring's pool too
    bool file_ops_ = true;         // config fs_io_uring
    bool batched_sends_ = false;   // config io_batched_sends
    int socket_busy_poll_us_ = 0;  // an int: setsockopt's argument
    atomic<std::uint64_t> busy_poll_set_{0}, busy_poll_failed_{0};
    atomic<int> busy_poll_errno_{0};  // the first refusal
};

}  // namespace blitz::detail
