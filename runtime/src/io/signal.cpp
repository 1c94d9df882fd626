// SPDX-License-Identifier: MIT
// Signal delivery (blitz/signal.hpp): the process-wide handler, its counters and eventfd, and
// the waiters the I/O driver wakes.
#include "blitz/signal.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"
#include "io/io_driver.hpp"
#include "io/signal_dispatch.hpp"

namespace blitz::signal::detail {
namespace {

using blitz::detail::lock_guard;
using blitz::detail::wait_node;
using blitz::detail::wait_queue;
using blitz::detail::wake_batch;

constexpr int max_signo = 64;  // _NSIG - 1 on Linux

// Written by the handler: plain lock-free atomics only.
blitz::detail::atomic<std::uint64_t> g_delivered[max_signo + 1];
blitz::detail::atomic<bool> g_restore[max_signo + 1];
blitz::detail::atomic<int> g_efd{-1};

struct registry {
    blitz::detail::mutex mu;
    bool installed[max_signo + 1] BLITZ_GUARDED_BY(mu) = {};
    wait_queue waiters[max_signo + 1] BLITZ_GUARDED_BY(mu);
};
registry& reg() {
    static registry* r = new registry();  // never destroyed: handlers outlive everything
    return *r;
}

extern "C" void on_signal(int signo) {
    const int saved = errno;
    if (signo > 0 && signo <= max_signo) {
        // release: a stream that sees the count sees everything before the delivery
        g_delivered[signo].fetch_add(1, std::memory_order_release);
        if (g_restore[signo].load(std::memory_order_relaxed)) {
            struct sigaction dfl{};
            dfl.sa_handler = SIG_DFL;
            ::sigaction(signo, &dfl, nullptr);  // async-signal-safe
        }
        const int fd = g_efd.load(std::memory_order_relaxed);
        if (fd >= 0) {
            const std::uint64_t one = 1;
            (void)!::write(fd, &one, sizeof one);
        }
    }
    errno = saved;
}

bool forbidden(int signo) noexcept {
    return signo <= 0 || signo > max_signo || signo == SIGKILL || signo == SIGSTOP ||
           signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL;
}

}  // namespace

int install(int signo, options o) noexcept {
    if (forbidden(signo)) return -EINVAL;
    registry& r = reg();
    lock_guard l(r.mu);
    if (g_efd.load(std::memory_order_relaxed) < 0) {
        const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (fd < 0) return -errno;
        g_efd.store(fd, std::memory_order_relaxed);  // before any handler is installed
    }
    g_restore[signo].store(o.restore_default_after_first, std::memory_order_relaxed);
    if (r.installed[signo]) {
        // Still ours unless a restore_default_after_first delivery put the default back.
        struct sigaction cur{};
        if (::sigaction(signo, nullptr, &cur) == 0 && cur.sa_handler == on_signal) return 0;
    }
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (::sigaction(signo, &sa, nullptr) != 0) return -errno;
    r.installed[signo] = true;
    return 0;
}

std::uint64_t delivered(int signo) noexcept {
    return g_delivered[signo].load(std::memory_order_acquire);
}

bool wait(int signo, std::uint64_t seen, wait_node& node, waker w) noexcept {
    registry& r = reg();
    lock_guard l(r.mu);
    // Under the lock: dispatch() takes it after reading the eventfd, which the handler wrote
    // after counting, so a delivery is either seen here or finds the node linked.
    if (delivered(signo) != seen) return false;
    node.done.store(false, std::memory_order_relaxed);
    node.w = std::move(w);
    r.waiters[signo].push_back(&node);
    return true;
}

void cancel_wait(int signo, wait_node& node) noexcept {
    registry& r = reg();
    lock_guard l(r.mu);
    if (node.linked()) {
        node.unlink();
        node.w.reset();
    }
}

// Called by an I/O driver that saw the eventfd readable: drains it and wakes every waiter
// (each one checks its own signal's count and waits again if nothing is new for it).
void drain(int fd) noexcept {
    std::uint64_t v;
    while (::read(fd, &v, sizeof v) > 0) {
    }
}

void dispatch(int fd) noexcept {
    drain(fd);
    registry& r = reg();
    wake_batch b;
    {
        blitz::detail::unique_lock l(r.mu);
        for (int s = 1; s <= max_signo; ++s) {
            if (!r.waiters[s].empty()) blitz::detail::wake_all(r.waiters[s], r.mu, b);
        }
    }
    b.flush();
}

int shared_fd() noexcept { return g_efd.load(std::memory_order_relaxed); }

void enable_signals() { blitz::detail::current_io().enable_signals(); }

}  // namespace blitz::signal::detail

namespace blitz::signal {

io_result<signal_stream> signal(int signo, options o) {
    if (const int r = detail::install(signo, o); r < 0) return blitz::detail::errno_code(r);
    detail::enable_signals();
    return signal_stream(signo, detail::delivered(signo));
}

task<io_result<void>> ctrl_c(options o) {
    auto s = signal(kind::interrupt, o);
    if (!s) co_return s.error();
    (void)co_await s->recv();
    co_return io_result<void>();
}

}  // namespace blitz::signal
