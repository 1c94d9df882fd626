// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// Unix signals as async streams (issue 17, IO.md 7.5): blitz::signal::ctrl_c() and
// blitz::signal::signal(kind) -> a stream whose co_await s.recv() completes on the next
// delivery.
//
// How they arrive: the first stream for a signal installs a process-wide handler (sigaction,
// SA_RESTART; never removed, as in Tokio: later streams share it). The handler is
// async-signal-safe: it counts the delivery on a lock-free counter and writes an eventfd. Every
// runtime with a signal stream registers that eventfd with its I/O driver, so a delivery wakes
// a runtime whose workers are all parked; the driver wakes the streams' tasks.
//
// Coalescing: deliveries between two recv() calls (or before the first) collapse into one
// completion; recv() returns how many deliveries it covers. Only deliveries after the stream
// was created count.
//
// Thread-safety: a stream is used by one task at a time; any number of streams, in any number of
// runtimes, may listen for the same signal (each sees every delivery).

#include <signal.h>

#include <cstdint>
#include <utility>

#include "blitz/detail/context.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/wait_list.hpp"
#include "blitz/net/io_result.hpp"
#include "blitz/task.hpp"

namespace blitz::signal {

// The signals a service usually handles; signal(int) takes any other catchable number.
enum class kind : int {
    interrupt = SIGINT,  // Ctrl-C
    terminate = SIGTERM,
    hangup = SIGHUP,
    quit = SIGQUIT,
    user1 = SIGUSR1,
    user2 = SIGUSR2,
    child = SIGCHLD,
    window_change = SIGWINCH,
    alarm = SIGALRM,
    pipe = SIGPIPE,
};

struct options {
    // After the first delivery the handler puts the signal's default action back (in the
    // handler itself), so a second Ctrl-C kills the process even if the program is stuck. The
    // choice is the signal's, process-wide: the most recently created stream's holds. A stream
    // created after the default came back installs the handler again.
    bool restore_default_after_first = false;
};

namespace detail {
// The calling runtime's I/O driver watches the signal eventfd from now on (idempotent).
void enable_signals();
// Installs the handler for `signo` (once per process); -EINVAL for signals that cannot or must
// not be caught (SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL) or out of range.
int install(int signo, options o) noexcept;
// Deliveries of `signo` so far.
std::uint64_t delivered(int signo) noexcept;
// Links `node` to be woken at the next delivery of `signo` unless the count already passed
// `seen` (then returns false, nothing linked).
bool wait(int signo, std::uint64_t seen, blitz::detail::wait_node& node, waker w) noexcept;
void cancel_wait(int signo, blitz::detail::wait_node& node) noexcept;
}  // namespace detail

class signal_stream {
public:
    class recv_op;

    signal_stream(signal_stream&& o) noexcept
        : signo_(std::exchange(o.signo_, 0)), seen_(o.seen_) {}
    signal_stream& operator=(signal_stream&& o) noexcept {
        signo_ = std::exchange(o.signo_, 0);
        seen_ = o.seen_;
        return *this;
    }
    signal_stream(const signal_stream&) = delete;
    signal_stream& operator=(const signal_stream&) = delete;

    int signo() const noexcept { return signo_; }
    // co_await s.recv() -> std::uint64_t: the deliveries since the last recv (at least 1).
    // Cancel-safe: a recv dropped before completing consumed nothing.
    recv_op recv() noexcept;

private:
    friend io_result<signal_stream> signal(int signo, options o);
    signal_stream(int signo, std::uint64_t seen) noexcept : signo_(signo), seen_(seen) {}
    int signo_ = 0;
    std::uint64_t seen_ = 0;
};

class signal_stream::recv_op : private ::blitz::detail::ready_hook {
public:
    explicit recv_op(signal_stream& s) noexcept : s_(&s), node_(this) {}
    recv_op(const recv_op&) = delete;
    recv_op& operator=(const recv_op&) = delete;
    ~recv_op() {
        if (armed_) detail::cancel_wait(s_->signo_, node_);
    }
    bool await_ready() noexcept { return take(); }
    bool await_suspend(std::coroutine_handle<> h) {
        task_ = blitz::detail::suspend_current(h, &ready, this, &describe);
        return arm();
    }
    std::uint64_t await_resume() noexcept { return got_; }

private:
    bool take() noexcept {
        const std::uint64_t now = detail::delivered(s_->signo_);
        if (now == s_->seen_) return false;
        got_ = now - s_->seen_;
        s_->seen_ = now;
        return true;
    }
    // Waits; false when a delivery came meanwhile (do not suspend).
    bool arm() noexcept {
        for (;;) {
            if (detail::wait(s_->signo_, s_->seen_, node_, task_->make_waker())) {
                armed_ = true;
                return true;
            }
            if (take()) return false;
        }
    }
    static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
        [[maybe_unused]] const auto* a = static_cast<const recv_op*>(p);
        out.kind = "signal";
        out.detail = "signal " + std::to_string(a->s_->signo_);
    }
    static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
        auto* a = const_cast<recv_op*>(static_cast<const recv_op*>(p));
        // acquire: pairs with the dispatch's release of the node
        if (!a->node_.done.load(std::memory_order_acquire)) return false;  // a stray wake
        a->armed_ = false;
        if (a->take()) return true;
        return !a->arm();  // a wake for another stream's delivery: wait again
    }

    signal_stream* s_;
    blitz::detail::wait_node node_;
    bool armed_ = false;
    std::uint64_t got_ = 0;
    blitz::detail::task_header* task_ = nullptr;
};

inline signal_stream::recv_op signal_stream::recv() noexcept { return recv_op(*this); }

// A stream of `signo` deliveries. Call inside a task of a runtime with an I/O driver (throws
// std::logic_error otherwise); EINVAL for signals that cannot or must not be caught.
io_result<signal_stream> signal(int signo, options o = {});
inline io_result<signal_stream> signal(kind k, options o = {}) {
    return signal(static_cast<int>(k), o);
}

// co_await blitz::signal::ctrl_c(): completes at the next SIGINT after the call.
task<io_result<void>> ctrl_c(options o = {});

}  // namespace blitz::signal
