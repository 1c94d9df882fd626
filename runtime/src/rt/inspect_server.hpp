// SPDX-License-Identifier: MIT
#pragma once
// inspect_server: the thread behind config::inspect_socket and config::dump_signal (issue 46):
// a Unix socket that answers metrics and dump requests from the process's own user, and a
// signal that writes the task dump to stderr.

#include <functional>
#include <string>
#include <thread>

namespace blitz::detail {

// One per runtime that sets inspect_socket or dump_signal.
//
// Protocol, per connection: the client writes one request line ("metrics", "openmetrics",
// "dump", "dump text", "lost"; at most 255 bytes, ended by a newline or by shutting down its
// write side), the server writes the answer and closes. A request line "GET /<name> HTTP/..."
// gets the same answer as an HTTP/1.0 response ("GET /metrics": the OpenMetrics text, for a
// scraper through `curl --unix-socket` or a proxy; "GET /dump/text": the dump's text). Connections
// are served one at a time; a client that sends nothing within a second, or does not read its
// answer within a second, is dropped, so a stalled client holds the others up by at most that. A
// peer whose user id (SO_PEERCRED) is not the process's effective one is refused with "refused:
// ..." before its request is read.
//
// The socket file is bound under a temporary name, made 0600 and renamed into place, so it is
// never reachable with wider permissions; it is unlinked when the server stops.
// Invariants: the thread runs from construction to stop(); the handler runs only on it.
// Thread-safety: construct and stop from one thread; the signal handler only writes to an
// eventfd.
class inspect_server {
public:
    using handler = std::function<std::string(const std::string& request)>;
    // `path`: the socket path (empty: none; "auto": default_socket_path()); `dump_signal`: 0 or
    // the signal that writes `dump_text()` to stderr. Throws config_error for a path in use or
    // that cannot be made (naming the path and the reason).
    inspect_server(std::string path, int dump_signal, handler answer,
                   std::function<std::string()> dump_text);
    ~inspect_server() { stop(); }
    inspect_server(const inspect_server&) = delete;
    inspect_server& operator=(const inspect_server&) = delete;

    void stop() noexcept;
    const std::string& path() const noexcept { return path_; }

    // Where "auto" puts the socket of process `pid`: $XDG_RUNTIME_DIR/blitz-<pid>.sock, or
    // /tmp/blitz-<uid>/blitz-<pid>.sock. `make_dir` creates /tmp/blitz-<uid> (0700) when needed
    // and refuses one owned by another user or open to others.
    static std::string default_socket_path(long pid, bool make_dir);

private:
    void run() noexcept;
    void serve_one(int conn) noexcept;

    std::string path_;
    int dump_signal_ = 0;
    handler answer_;
    std::function<std::string()> dump_text_;
    int listen_fd_ = -1;
    int stop_fd_ = -1;  // eventfd: stop() writes it
    int dump_fd_ = -1;  // eventfd: the dump signal's handler writes it
    std::thread thread_;
};

}  // namespace blitz::detail
