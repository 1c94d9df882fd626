// SPDX-License-Identifier: MIT
// Child processes (blitz/process.hpp): spawning with posix_spawn, waiting on a pidfd or on
// SIGCHLD, pipes, and the reaping of dropped children.
#include "blitz/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "blitz/config.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/spawn.hpp"
#include "blitz/net/socket.hpp"
#include "blitz/signal.hpp"
#include "task/context_internal.hpp"

extern char** environ;

namespace blitz::process {
namespace detail {

using blitz::detail::errno_code;

long fd_read_op::attempt() const noexcept {
    const ssize_t r = ::read(fd, data, n);
    return r < 0 ? -errno : r;
}
io_result<std::size_t> fd_read_op::finish(long r) const {
    if (r < 0) return errno_code(r);
    return static_cast<std::size_t>(r);
}

long fd_write_op::attempt() const noexcept {
    // A write to a pipe whose reader is gone raises SIGPIPE: block it on this thread for the
    // write, and take the one the write raised, so the caller sees EPIPE and nothing else.
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    const ssize_t r = ::write(fd, data, n);
    const int err = errno;
    if (r < 0 && err == EPIPE) {
        const timespec now{0, 0};
        while (sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return r < 0 ? -err : r;
}
io_result<std::size_t> fd_write_op::finish(long r) const {
    if (r < 0) return errno_code(r);
    return static_cast<std::size_t>(r);
}

// ---- dropped children ----

namespace {
blitz::detail::mutex g_orphans_mu;
std::vector<pid_t>* g_orphans BLITZ_GUARDED_BY(g_orphans_mu) = nullptr;

bool no_orphan_reap() noexcept {
#if BLITZ_FAULTS
    const blitz::detail::runtime_context* r = blitz::detail::current_or_draining_runtime();
    return r && r->cfg && r->cfg->debug.process_no_orphan_reap;  // O13's control
#else
    return false;
#endif
}

exit_status decode(int st) noexcept {
    exit_status e;
    if (WIFEXITED(st)) {
        e.code = WEXITSTATUS(st);
    } else if (WIFSIGNALED(st)) {
        e.signal = WTERMSIG(st);
    }
    return e;
}
}  // namespace

void add_orphan(pid_t pid) {
    blitz::detail::lock_guard l(g_orphans_mu);
    if (!g_orphans) g_orphans = new std::vector<pid_t>();  // never freed: used until exit
    g_orphans->push_back(pid);
}

struct child_state {
    pid_t pid = -1;
    bool kill_on_drop = false;
    bool sigchld = false;                           // wait on SIGCHLD instead of a pidfd
    std::optional<blitz::detail::io_object> pidfd;  // the pidfd path
    std::optional<signal::signal_stream> sigchld_stream;
    std::optional<exit_status> status;  // once reaped

    child_state() = default;
    child_state(const child_state&) = delete;
    child_state& operator=(const child_state&) = delete;
    ~child_state() {
        if (status || pid <= 0) return;
        if (no_orphan_reap()) return;  // O13's control: left a zombie
        int st;
        if (::waitpid(pid, &st, WNOHANG) == 0) add_orphan(pid);  // reaped by a later pass
    }

    // 1 reaped, 0 still running, -errno on failure.
    int try_reap() noexcept {
        if (status) return 1;
        int st;
        const pid_t r = ::waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            status = decode(st);
            return 1;
        }
        if (r == 0) return 0;
        return -errno;  // ECHILD: reaped elsewhere (SIGCHLD set to SIG_IGN, or waitpid(-1))
    }

    // Until the child exits (or the runtime shuts down).
    task<io_result<exit_status>> wait_exit() {
        for (;;) {
            const int r = try_reap();
            if (r == 1) co_return *status;
            if (r < 0) co_return errno_code(r);
            if (pidfd) {
                auto ready = co_await blitz::detail::io_op<net::ops::ready_op>(
                    *pidfd, blitz::detail::io_direction::read, net::ops::ready_op{}, false);
                if (!ready) co_return ready.error();
                continue;
            }
            if (!sigchld_stream) {
                // Counts deliveries from now on; the next look at waitpid covers the ones before.
                auto s = signal::signal(signal::kind::child);
                if (!s) co_return s.error();
                sigchld_stream.emplace(std::move(*s));
                continue;
            }
            (void)co_await sigchld_stream->recv();
        }
    }
};

// The task that reaps a dropped child once it exits; if the runtime shuts down first, the
// state's destructor leaves the pid to the global list.
task<void> reap_later(std::unique_ptr<child_state> s) { (void)co_await s->wait_exit(); }

}  // namespace detail

std::size_t reap_orphans() noexcept {
    blitz::detail::lock_guard l(detail::g_orphans_mu);
    if (!detail::g_orphans) return 0;
    if (detail::no_orphan_reap()) return detail::g_orphans->size();
    std::vector<pid_t>& v = *detail::g_orphans;
    std::size_t keep = 0;
    for (pid_t pid : v) {
        int st;
        if (::waitpid(pid, &st, WNOHANG) == 0) v[keep++] = pid;  // still running
    }
    v.resize(keep);
    return keep;
}

// ---- pipe_stream ----

task<io_result<void>> pipe_stream::write_all(std::span<const std::byte> buf) {
    while (!buf.empty()) {
        auto n = co_await write(buf);
        if (!n) co_return n.error();
        buf = buf.subspan(*n);
    }
    co_return io_result<void>();
}

task<io_result<std::string>> pipe_stream::read_to_end() {
    std::string all;
    std::byte chunk[16384];
    for (;;) {
        auto n = co_await read(chunk);
        if (!n) co_return n.error();
        if (*n == 0) co_return all;
        all.append(reinterpret_cast<const char*>(chunk), *n);
    }
}

// ---- child ----

child::child(std::unique_ptr<detail::child_state> s) noexcept : s_(std::move(s)) {}
child::child(child&&) noexcept = default;
child& child::operator=(child&&) noexcept = default;

child::~child() {
    if (!s_) return;
    stdin_pipe.reset();  // before the child can be waited for
    if (s_->status) return;
    if (s_->kill_on_drop) ::kill(s_->pid, SIGKILL);
    if (s_->try_reap() != 0) return;
    if (detail::no_orphan_reap()) {
        s_->status = exit_status{};  // O13's control: nobody will reap it
        return;
    }
    reap_orphans();
    // Reaped by a task of this runtime when it exits; outside a runtime (or if no task can be
    // made), by a later pass over the global list.
    if (blitz::detail::current_runtime()) {
        try {
            blitz::detail::spawn_on(blitz::detail::spawn_target(),
                                    detail::reap_later(std::move(s_)))
                .detach();
            return;
        } catch (...) {
        }
    }
}

pid_t child::id() const noexcept { return s_ ? s_->pid : -1; }

task<io_result<exit_status>> child::wait() {
    if (!s_) co_return std::make_error_code(std::errc::invalid_argument);
    stdin_pipe.reset();
    reap_orphans();
    co_return co_await s_->wait_exit();
}

io_result<std::optional<exit_status>> child::try_wait() {
    if (!s_) return std::make_error_code(std::errc::invalid_argument);
    const int r = s_->try_reap();
    if (r < 0) return blitz::detail::errno_code(r);
    if (r == 0) return std::optional<exit_status>();
    return std::optional<exit_status>(*s_->status);
}

io_result<void> child::send_signal(int signo) {
    if (!s_) return std::make_error_code(std::errc::invalid_argument);
    if (s_->status) return std::make_error_code(std::errc::no_such_process);  // reaped
    if (::kill(s_->pid, signo) != 0) return blitz::detail::errno_code(-errno);
    return io_result<void>();
}

// ---- command ----

namespace {

// Closes the descriptors it holds unless released.
struct fd_set_guard {
    std::vector<int> fds;
    ~fd_set_guard() {
        for (int fd : fds) ::close(fd);
    }
};

bool force_sigchld() noexcept {
    const blitz::detail::runtime_context* r = blitz::detail::current_runtime();
    return r && r->cfg && r->cfg->process_wait_sigchld;
}

task<io_result<captured>> run_output(command c);
task<io_result<exit_status>> run_status(command c);

}  // namespace

io_result<child> command::spawn() {
    reap_orphans();
    posix_spawn_file_actions_t fa;
    if (const int e = posix_spawn_file_actions_init(&fa)) return blitz::detail::errno_code(-e);
    posix_spawnattr_t attr;
    if (const int e = posix_spawnattr_init(&attr)) {
        posix_spawn_file_actions_destroy(&fa);
        return blitz::detail::errno_code(-e);
    }
    struct cleanup {
        posix_spawn_file_actions_t* fa;
        posix_spawnattr_t* attr;
        ~cleanup() {
            posix_spawn_file_actions_destroy(fa);
            posix_spawnattr_destroy(attr);
        }
    } done{&fa, &attr};
    fd_set_guard child_ends, parent_ends;
    int parent_fd[3] = {-1, -1, -1};
    const stdio modes[3] = {in_, out_, err_};
    for (int target = 0; target < 3; ++target) {
        const bool child_reads = target == 0;
        switch (modes[target]) {
            case stdio::inherit:
                break;
            case stdio::null:
                posix_spawn_file_actions_addopen(&fa, target, "/dev/null",
                                                 child_reads ? O_RDONLY : O_WRONLY, 0);
                break;
            case stdio::piped: {
                int p[2];
                if (::pipe2(p, O_CLOEXEC) != 0) return blitz::detail::errno_code(-errno);
                const int child_end = child_reads ? p[0] : p[1];
                parent_fd[target] = child_reads ? p[1] : p[0];
                child_ends.fds.push_back(child_end);
                parent_ends.fds.push_back(parent_fd[target]);
                posix_spawn_file_actions_adddup2(&fa, child_end, target);
                break;
            }
        }
    }
    if (cwd_) posix_spawn_file_actions_addchdir_np(&fa, cwd_->c_str());
    // The child starts with no signal blocked and every signal at its default action.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<char*> argv;
    argv.push_back(program_.data());
    for (std::string& a : args_) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text;
    if (!env_clear_) {
        for (char** e = environ; e && *e; ++e) {
            const std::string kv = *e;
            const std::string key = kv.substr(0, kv.find('='));
            if (env_.count(key) == 0) env_text.push_back(kv);
        }
    }
    for (const auto& [k, v] : env_) {
        if (v) env_text.push_back(k + "=" + *v);
    }
    std::vector<char*> envp;
    for (std::string& kv : env_text) envp.push_back(kv.data());
    envp.push_back(nullptr);

    pid_t pid = -1;
    const bool search = program_.find('/') == std::string::npos;
    const int e = search
                      ? ::posix_spawnp(&pid, program_.c_str(), &fa, &attr, argv.data(), envp.data())
                      : ::posix_spawn(&pid, program_.c_str(), &fa, &attr, argv.data(), envp.data());
    if (e != 0) return blitz::detail::errno_code(-e);
    auto s = std::make_unique<detail::child_state>();
    s->pid = pid;
    s->kill_on_drop = kill_on_drop_;
    // From here on the state reaps the child whatever happens (its destructor).
    s->sigchld = force_sigchld();
    if (!s->sigchld) {
        const long fd = ::syscall(SYS_pidfd_open, pid, 0);
        if (fd >= 0) {
            try {
                s->pidfd.emplace(static_cast<int>(fd));
            } catch (const std::system_error& x) {
                return x.code();
            }
        } else {
            s->sigchld = true;  // no pidfds here (Linux < 5.3, or a seccomp filter)
        }
    }
    child c(std::move(s));
    parent_ends.fds.clear();  // owned by the pipe_streams from here on
    try {
        if (parent_fd[0] >= 0) c.stdin_pipe.emplace(parent_fd[0]);
        if (parent_fd[1] >= 0) c.stdout_pipe.emplace(parent_fd[1]);
        if (parent_fd[2] >= 0) c.stderr_pipe.emplace(parent_fd[2]);
    } catch (const std::system_error& x) {
        return x.code();
    }
    return c;
}

task<io_result<captured>> command::output() {
    command c = *this;
    if (c.in_ == stdio::inherit) c.in_ = stdio::null;
    if (c.out_ == stdio::inherit) c.out_ = stdio::piped;
    if (c.err_ == stdio::inherit) c.err_ = stdio::piped;
    return run_output(std::move(c));
}
task<io_result<exit_status>> command::status() { return run_status(*this); }

namespace {

task<io_result<std::string>> read_all(pipe_stream p) { co_return co_await p.read_to_end(); }

task<io_result<captured>> run_output(command c) {
    auto ch = c.spawn();
    if (!ch) co_return ch.error();
    captured out;
    join_handle<io_result<std::string>> err_reader;
    if (ch->stderr_pipe) {
        err_reader = blitz::detail::spawn_on(blitz::detail::spawn_target(),
                                             read_all(std::move(*ch->stderr_pipe)));
    }
    ch->stderr_pipe.reset();
    if (ch->stdout_pipe) {
        auto o = co_await ch->stdout_pipe->read_to_end();
        if (!o) co_return o.error();
        out.out = std::move(*o);
    }
    if (err_reader.valid()) {
        auto e = co_await err_reader;
        if (!e) co_return e.error();
        out.err = std::move(*e);
    }
    auto st = co_await ch->wait();
    if (!st) co_return st.error();
    out.status = *st;
    co_return out;
}

task<io_result<exit_status>> run_status(command c) {
    auto ch = c.spawn();
    if (!ch) co_return ch.error();
    co_return co_await ch->wait();
}

}  // namespace

}  // namespace blitz::process
