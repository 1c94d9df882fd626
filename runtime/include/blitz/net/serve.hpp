// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::net::serve: an accept loop that survives running out of descriptors (issue 16, O8).
//
//   co_await net::serve(listener, [](net::tcp_stream s) -> task<void> { ... }, options);
//
// Each accepted connection runs handler(stream) in its own task. At most max_connections run
// at once (further connections wait in the kernel's backlog). Per-connection accept errors
// (ECONNABORTED, ECONNRESET, EPROTO, EPERM) are skipped at once. When the process runs out of
// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the loop never spins: it closes its
// reserve descriptor, accepts and closes the connections queued right now (their clients see
// the end at once instead of waiting), reopens the reserve, and backs off (1 ms, doubling to
// 1 s, reset by the next successful accept). It returns when `stop` is cancelled or the
// listener fails otherwise (the error is in the stats); handlers still running are not waited
// for (track them with a task_tracker or a scope for a graceful shutdown).

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <system_error>

#include "blitz/combinators.hpp"
#include "blitz/detail/atomic.hpp"
#include "blitz/net/socket.hpp"
#include "blitz/sync/cancellation_token.hpp"
#include "blitz/sync/semaphore.hpp"
#include "blitz/time.hpp"

namespace blitz::net {

// The loop's counters; any thread may read them while it runs (last_error: after it returned).
struct serve_stats {
    using counter = blitz::detail::atomic<std::uint64_t>;
    counter accepted{0};         // connections handed to the handler
    counter skipped_errors{0};   // per-connection accept errors skipped
    counter exhausted{0};        // EMFILE/ENFILE/ENOBUFS/ENOMEM seen
    counter shed{0};             // queued connections accepted and closed while exhausted
    counter backoffs{0};         // back-off sleeps taken
    std::error_code last_error;  // what ended the loop, if an error did

    static void bump(counter& c, std::uint64_t n = 1) noexcept {
        c.fetch_add(n, std::memory_order_relaxed);
    }
};

struct serve_options {
    std::size_t max_connections = 10000;
    std::chrono::milliseconds backoff_min{1};
    std::chrono::milliseconds backoff_max{1000};
    cancellation_token stop;       // cancel it to end the loop
    serve_stats* stats = nullptr;  // counters, if the caller wants them
#if BLITZ_FAULTS
    bool fault_no_backoff = false;  // O8's control: retry at once, never shed
#endif
};

namespace detail {
inline bool per_connection_error(const std::error_code& e) noexcept {
    return e == std::errc::connection_aborted || e == std::errc::connection_reset ||
           e == std::errc::protocol_error || e == std::errc::operation_not_permitted;
}
inline bool exhaustion(const std::error_code& e) noexcept {
    return e == std::errc::too_many_files_open || e == std::errc::too_many_files_open_in_system ||
           e == std::errc::no_buffer_space || e == std::errc::not_enough_memory;
}
// A connection's share of the semaphore and its permit, released in that order's reverse.
struct connection_slot {
    std::shared_ptr<semaphore> keep;
    semaphore_permit permit;
};
// Accepts and closes whatever is queued on `listen_fd` now; returns how many.
inline std::uint64_t shed_queued(int listen_fd) noexcept {
    std::uint64_t n = 0;
    for (;;) {
        const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) return n;
        ::close(c);
        ++n;
    }
}
}  // namespace detail

template <class Stream, class Handler>
task<void> serve(basic_listener<Stream>& listener, Handler handler, serve_options o = {}) {
    serve_stats local;
    serve_stats& st = o.stats ? *o.stats : local;
    // Shared with the connections' tasks: they give their permits back after this loop may
    // have returned (a stop does not wait for them).
    auto slots =
        std::make_shared<semaphore>(o.max_connections, std::max<std::size_t>(o.max_connections, 1));
    int reserve = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    auto backoff = o.backoff_min;
    bool no_backoff = false;
#if BLITZ_FAULTS
    no_backoff = o.fault_no_backoff;
#endif
    for (;;) {
        auto permit = co_await select(slots->acquire(1), o.stop.cancelled());
        if (permit.index() == 1) break;
        auto r = co_await select(listener.accept(), o.stop.cancelled());
        if (r.index() == 1) break;
        auto& s = std::get<0>(r);
        if (s) {
            serve_stats::bump(st.accepted);
            backoff = o.backoff_min;
            // The handler is copied into the connection's task (which may outlive this loop);
            // the permit goes when the task ends, before the task's share of the semaphore. One
            // parameter holds both, since members are destroyed in reverse order while the order
            // in which a coroutine's parameter copies are destroyed is the compiler's (g++ 12
            // destroys them first to last: with two parameters the permit was given back to a
            // freed semaphore, found by the g++ ASan build).
            detail::connection_slot slot{slots, std::move(std::get<0>(permit))};
            spawn([]([[maybe_unused]] detail::connection_slot slot, Handler h,
                     Stream s) -> task<void> { co_await h(std::move(s)); }(std::move(slot), handler,
                                                                           std::move(*s)))
                .detach();
            continue;
        }
        const std::error_code e = s.error();
        if (detail::per_connection_error(e)) {
            serve_stats::bump(st.skipped_errors);
            continue;
        }
        if (!detail::exhaustion(e)) {
            st.last_error = e;
            break;
        }
        serve_stats::bump(st.exhausted);
        if (no_backoff) continue;
        if (reserve >= 0) ::close(reserve);
        serve_stats::bump(st.shed, detail::shed_queued(listener.native_handle()));
        reserve = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        serve_stats::bump(st.backoffs);
        auto slept = co_await select(sleep(backoff), o.stop.cancelled());
        if (slept.index() == 1) break;
        backoff = std::min(backoff * 2, o.backoff_max);
    }
    if (reserve >= 0) ::close(reserve);
}

}  // namespace blitz::net
