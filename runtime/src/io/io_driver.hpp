// SPDX-License-Identifier: MIT
#pragma once
// io_driver: the runtime's one I/O driver over its backend (IO.md 7.2). Exactly one thread at
// a time turns it (a try-lock, as Tokio, Go and Asio do): a parked worker blocks in it, running
// workers look at it without blocking at the start of their ticks.

#include <chrono>
#include <memory>
#include <string>

#include "base/atomic.hpp"
#include "blitz/config.hpp"
#include "blitz/detail/mutex.hpp"
#include "io/backend.hpp"

namespace blitz::detail {

class scheduled_io;

// Counters for runtime_metrics and the O checkers.
struct io_driver_stats {
    std::uint64_t turns = 0;          // turns taken (blocking or not)
    std::uint64_t events = 0;         // readiness events dispatched
    std::uint64_t registrations = 0;  // descriptors registered so far
    std::uint64_t live = 0;           // registered and not yet deregistered
    std::uint64_t blocks = 0;         // scheduled_io blocks not yet freed (live + pending)
    std::uint64_t waits = 0, submits = 0, wakes = 0, wake_reads = 0;  // syscalls by kind
};

// Lifetime: shared by the runtime and by every socket registered with it, so a socket that
// outlives its runtime still deregisters into a valid driver (its waits end at shutdown).
// Thread-safety: add/remove/wake/shutdown from any thread; turn() only while holding the lock.
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

    scheduled_io* add(int fd);
    void remove(scheduled_io* s) noexcept;
    // True while some descriptor is registered (workers then poll and sleep in the driver).
    bool has_registrations() const noexcept {
        return registered_.load(std::memory_order_seq_cst) != 0;
    }
    // Runtime shutdown: every registration reports io_shutdown, so every wait ends.
    void shutdown() noexcept;

    io_driver_stats stats() const noexcept;

private:
    explicit io_driver(std::unique_ptr<io_backend> b) : backend_(std::move(b)) {}
    void ready(scheduled_io* s, std::uint32_t bits) noexcept override;
    void released(scheduled_io* s) noexcept override;
    void free_released() noexcept;

    std::unique_ptr<io_backend> backend_;
    alignas(cache_line) atomic<bool> locked_{false};
    mutable detail::mutex reg_mu_;
    scheduled_io* live_ BLITZ_GUARDED_BY(reg_mu_) = nullptr;     // every block not yet freed
    scheduled_io* pending_ BLITZ_GUARDED_BY(reg_mu_) = nullptr;  // deregistered, to free
    bool shut_down_ BLITZ_GUARDED_BY(reg_mu_) = false;
    std::uint64_t registrations_ BLITZ_GUARDED_BY(reg_mu_) = 0;
    std::uint64_t live_count_ BLITZ_GUARDED_BY(reg_mu_) = 0;
    atomic<std::uint64_t> turns_{0}, events_{0};
    atomic<std::uint64_t> registered_{0};   // add()s not yet remove()d
    atomic<std::int64_t> last_turn_ns_{0};  // steady_clock, at the end of the last turn
};

}  // namespace blitz::detail
