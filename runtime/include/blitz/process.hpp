// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// Child processes (issue 17, IO.md 7.5): blitz::process::command builds one, spawn() starts it
// (posix_spawn), child::wait() awaits its exit without blocking a worker, and a child dropped
// without wait is reaped anyway: no zombies.
//
//   auto c = process::command("ls").arg("-l").cwd("/tmp").stdout_(process::stdio::piped).spawn();
//   auto out = co_await c->stdout_pipe->read_to_end();
//   auto status = co_await c->wait();
//
// Waiting: on a pidfd registered with the I/O driver (Linux 5.3+): the driver wakes the waiter
// when the child exits, and waitpid reaps it. Without pidfds (or with config
// process_wait_sigchld) a SIGCHLD stream (blitz/signal.hpp) wakes the waiter, which then tries
// waitpid(pid, WNOHANG): blitz never calls waitpid(-1), so other children of the process are not
// taken.
//
// Dropped children: kill_on_drop(true) sends SIGKILL first. Then the child is reaped by a task
// of the current runtime as soon as it exits; if that runtime shuts down first, by the next
// spawn, wait or drop in any runtime after the child exited (a global list), so no zombie
// outlives the next process activity.
//
// Piped stdio are pipe_streams (non-blocking pipe ends registered with the driver). A pipe write
// to a child that closed its end gives broken_pipe, never SIGPIPE. A child blocked writing to a
// piped stdout nobody reads blocks only itself (and whoever waits for it).
//
// Errors are std::error_code values (std::errc::no_such_file_or_directory for a missing program,
// permission_denied, ...). Thread-safety: a command, a child and a pipe_stream are used by one
// task at a time.

#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "blitz/detail/io_op.hpp"
#include "blitz/net/io_result.hpp"
#include "blitz/task.hpp"

namespace blitz::process {

enum class stdio { inherit, piped, null };

// How a child ended: exited with `code`, or killed by `signal` (code -1 then).
struct exit_status {
    int code = -1;
    int signal = 0;
    bool success() const noexcept { return signal == 0 && code == 0; }
};

namespace detail {
struct fd_read_op {
    int fd;
    void* data;
    std::size_t n;
    long attempt() const noexcept;
    io_result<std::size_t> finish(long r) const;
};
struct fd_write_op {
    int fd;
    const void* data;
    std::size_t n;
    long attempt() const noexcept;  // no SIGPIPE: EPIPE instead
    io_result<std::size_t> finish(long r) const;
};
struct child_state;
}  // namespace detail

// One end of a pipe to or from a child.
class pipe_stream {
public:
    explicit pipe_stream(int fd) : io_(fd) {}  // takes `fd`; inside a runtime task
    // co_await p.read(buf) -> io_result<size_t>: at least one byte, or 0 at end of stream.
    blitz::detail::io_op<detail::fd_read_op> read(std::span<std::byte> buf) noexcept {
        return {io_, blitz::detail::io_direction::read,
                detail::fd_read_op{io_.fd(), buf.data(), buf.size()}, false};
    }
    // co_await p.write(buf) -> io_result<size_t>: at least one byte written.
    blitz::detail::io_op<detail::fd_write_op> write(std::span<const std::byte> buf) noexcept {
        return {io_, blitz::detail::io_direction::write,
                detail::fd_write_op{io_.fd(), buf.data(), buf.size()}, true};
    }
    task<io_result<void>> write_all(std::span<const std::byte> buf);
    // Everything until end of stream.
    task<io_result<std::string>> read_to_end();
    // Closes this end now (a child reading its stdin then sees end of input).
    void close() noexcept { io_.close(); }
    int fd() const noexcept { return io_.fd(); }

private:
    blitz::detail::io_object io_;
};

class child {
public:
    child(child&&) noexcept;
    child& operator=(child&&) noexcept;
    child(const child&) = delete;
    child& operator=(const child&) = delete;
    // Not waited for: kill_on_drop's SIGKILL, then reaped in the background (see the top).
    ~child();

    pid_t id() const noexcept;
    // co_await c.wait() -> io_result<exit_status>. Closes stdin_pipe first (a child waiting for
    // its input ends), as Tokio does. Cancel-safe; again after the exit: the same status.
    task<io_result<exit_status>> wait();
    // The status if the child has exited (reaping it), without waiting.
    io_result<std::optional<exit_status>> try_wait();
    // SIGKILL (or `signo`); an error once the child was reaped.
    io_result<void> kill() { return send_signal(SIGKILL); }
    io_result<void> send_signal(int signo);

    std::optional<pipe_stream> stdin_pipe;
    std::optional<pipe_stream> stdout_pipe;
    std::optional<pipe_stream> stderr_pipe;

private:
    friend class command;
    explicit child(std::unique_ptr<detail::child_state> s) noexcept;
    std::unique_ptr<detail::child_state> s_;
};

// What output() collects: the status and everything the child wrote to stdout and stderr.
struct captured {
    exit_status status;
    std::string out, err;
};

class command {
public:
    explicit command(std::string program) : program_(std::move(program)) {}
    command& arg(std::string a) {
        args_.push_back(std::move(a));
        return *this;
    }
    command& args(std::vector<std::string> as) {
        for (auto& a : as) args_.push_back(std::move(a));
        return *this;
    }
    // Environment: the parent's, with these changes (env_clear starts from nothing).
    command& env(std::string key, std::string value) {
        env_[std::move(key)] = std::move(value);
        return *this;
    }
    command& env_remove(std::string key) {
        env_[std::move(key)] = std::nullopt;
        return *this;
    }
    command& env_clear() {
        env_clear_ = true;
        env_.clear();
        return *this;
    }
    command& cwd(std::string dir) {
        cwd_ = std::move(dir);
        return *this;
    }
    command& stdin_(stdio s) {
        in_ = s;
        return *this;
    }
    command& stdout_(stdio s) {
        out_ = s;
        return *this;
    }
    command& stderr_(stdio s) {
        err_ = s;
        return *this;
    }
    command& kill_on_drop(bool on) {
        kill_on_drop_ = on;
        return *this;
    }
    // Starts the child (inside a runtime task). A program without '/' is looked up in PATH.
    io_result<child> spawn();
    // Runs it to the end with stdout and stderr piped and collected (unless set otherwise) and
    // stdin null (unless set), then waits.
    task<io_result<captured>> output();
    // Runs it to the end (stdio as set; inherited by default) and gives its status.
    task<io_result<exit_status>> status();

private:
    std::string program_;
    std::vector<std::string> args_;
    std::map<std::string, std::optional<std::string>> env_;
    bool env_clear_ = false;
    std::optional<std::string> cwd_;
    stdio in_ = stdio::inherit, out_ = stdio::inherit, err_ = stdio::inherit;
    bool kill_on_drop_ = false;
};

// Reaps the dropped children that have exited since (WNOHANG); spawn, wait and drops call it.
// Returns how many are still waiting to exit.
std::size_t reap_orphans() noexcept;

}  // namespace blitz::process
