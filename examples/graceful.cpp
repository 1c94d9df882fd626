// SPDX-License-Identifier: MIT
// A server with a graceful shutdown and a drain deadline. Each request is one line and takes
// 100 ms to serve. On SIGTERM or Ctrl-C (SIGINT) the server stops accepting (new connections
// are refused) and closes the connections that are idle (no request started), lets every
// request in flight finish and answer, and exits 0. A request that does not finish within the
// drain deadline (a client that sent half a line and went quiet, or stopped reading) is closed
// unanswered when the deadline passes, and a second SIGTERM ends the drain at once; a second
// Ctrl-C kills the process (restore_default_after_first). The connection handlers run under a
// task_tracker; the accept loop (net::serve) stops when its cancellation_token is cancelled.
//
//   example_graceful [epoll|io_uring] [sigint] [idle|half]
//       the server and its own clients in one process: 8 clients send a request each, then the
//       program raises SIGTERM (or SIGINT, as Ctrl-C does) while the 8 requests are in flight;
//       `idle` adds a client that connected and sent nothing (closed at the signal), `half` one
//       that sent half a line (closed at the 5 s deadline). Exit 0 when every request was
//       answered, the extra client's connection ended as it should and a late connection was
//       refused. epoll: on the epoll backend; io_uring: on io_uring where the kernel allows it
//   example_graceful [epoll|io_uring] serve
//       just the server: prints its port and serves until SIGTERM or Ctrl-C, with a 10 s drain
//       deadline (try it: nc 127.0.0.1 PORT, type a line, press Ctrl-C in the server's terminal
//       before the reply)

#include <atomic>
#include <blitz/blitz.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;
using namespace std::chrono_literals;

// What the handlers tell the shutdown (and the self test).
struct server_counts {
    std::atomic<int> started{0};            // requests whose first bytes arrived
    std::atomic<int> closed_idle{0};        // connections closed at the stop, no request started
    std::atomic<int> closed_unanswered{0};  // requests cut by the drain deadline
};

// One connection: a request line in, 100 ms of work, "done: <request>" out. `stop` ends it only
// while no request has started; `abort` (the drain deadline) ends it at any point.
blitz::task<void> handle(tcp_stream s, blitz::cancellation_token stop,
                         blitz::cancellation_token abort, server_counts& counts) {
    std::string line;
    char buf[256];
    while (line.find('\n') == std::string::npos) {
        const blitz::cancellation_token& ends_wait = line.empty() ? stop : abort;
        auto r = co_await blitz::select(s.read(buf, sizeof buf), ends_wait.cancelled(),
                                        abort.cancelled());
        if (r.index() != 0) {
            ++(line.empty() ? counts.closed_idle : counts.closed_unanswered);
            co_return;  // the stream closes with the frame
        }
        auto& n = std::get<0>(r);
        if (!n || *n == 0) co_return;
        if (line.empty()) ++counts.started;
        line.append(buf, *n);
    }
    const std::string reply = "done: " + line;
    auto r = co_await blitz::select(
        [](tcp_stream& s, std::string reply) -> blitz::task<bool> {
            co_await blitz::sleep(100ms);  // the work
            co_return static_cast<bool>(
                co_await s.write_all(std::as_bytes(std::span(reply.data(), reply.size()))));
        }(s, reply),
        abort.cancelled());
    if (r.index() != 0) ++counts.closed_unanswered;
}

blitz::task<bool> client(socket_address server, int id) {
    auto s = co_await tcp_stream::connect(server);
    if (!s) co_return false;
    const std::string req = "request " + std::to_string(id) + "\n";
    if (!co_await s->write_all(std::as_bytes(std::span(req.data(), req.size())))) co_return false;
    std::string reply;
    char buf[256];
    for (;;) {
        auto n = co_await s->read(buf, sizeof buf);
        if (!n) co_return false;
        if (*n == 0) break;
        reply.append(buf, *n);
    }
    co_return reply == "done: " + req;
}

// A client that connects, sends `partial` (maybe nothing) and then waits: true when the server
// ends the connection without a reply.
blitz::task<bool> stalled_client(socket_address server, std::string partial) {
    auto s = co_await tcp_stream::connect(server);
    if (!s) co_return false;
    if (!co_await s->write_all(std::as_bytes(std::span(partial.data(), partial.size())))) {
        co_return false;
    }
    char buf[256];
    auto n = co_await s->read(buf, sizeof buf);
    co_return !n || *n == 0;  // closed (or reset), nothing answered
}

enum class extra { none, idle, half };

blitz::task<bool> run(bool self_test, int raise_signo, extra stalled) {
    // Both streams exist before anything is served, so no signal can slip by.
    auto sigterm = blitz::signal::signal(blitz::signal::kind::terminate);
    blitz::signal::options once;
    once.restore_default_after_first = true;  // a second Ctrl-C kills
    auto sigint = blitz::signal::signal(blitz::signal::kind::interrupt, once);
    if (!sigterm || !sigint) co_return false;
    std::optional<tcp_listener> listener;
    {
        auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
        if (!l) co_return false;
        listener.emplace(std::move(*l));
    }
    const socket_address where = *listener->local_addr();
    const auto deadline = self_test ? 5s : 10s;
    blitz::cancellation_token stop, abort;
    blitz::task_tracker tracker;
    server_counts counts;
    blitz::net::serve_stats stats;
    blitz::net::serve_options o;
    o.stop = stop;
    o.stats = &stats;
    auto server = blitz::spawn(blitz::net::serve(
        *listener,
        [&](tcp_stream s) { return tracker.track(handle(std::move(s), stop, abort, counts)); }, o));

    std::vector<blitz::join_handle<bool>> clients;
    std::optional<blitz::join_handle<bool>> extra_client;
    if (self_test) {
        for (int i = 0; i < 8; ++i) clients.push_back(blitz::spawn(client(where, i)));
        if (stalled != extra::none) {
            extra_client.emplace(
                blitz::spawn(stalled_client(where, stalled == extra::half ? "request 8" : "")));
        }
        // Every connection accepted and every request begun before the signal (counts, not time).
        const int conns = 8 + (stalled != extra::none), begun = 8 + (stalled == extra::half);
        while (stats.accepted.load() < static_cast<unsigned>(conns) || counts.started < begun) {
            co_await blitz::sleep(1ms);
        }
        ::raise(raise_signo);
    } else {
        std::printf("listening on port %u; stop with Ctrl-C or SIGTERM\n", where.port());
        std::fflush(stdout);
    }

    // The shutdown: the first signal, then stop accepting, then let the handlers finish.
    auto which = co_await blitz::select(sigterm->recv(), sigint->recv());
    std::printf("%s: stop accepting, %zu connections open\n",
                which.index() == 0 ? "SIGTERM" : "SIGINT", tracker.size());
    std::fflush(stdout);
    stop.cancel();
    co_await server;
    listener.reset();  // closed: new connections are refused
    const bool refused = !(co_await tcp_stream::connect(where));
    tracker.close();
    // The drain: until every handler is done, the deadline passes, or a second SIGTERM.
    auto drained = co_await blitz::select(tracker.wait(), blitz::sleep(deadline), sigterm->recv());
    if (drained.index() != 0) {
        std::printf("%s: closing %zu connections unanswered\n",
                    drained.index() == 1 ? "drain deadline passed" : "second SIGTERM",
                    tracker.size());
        abort.cancel();
        co_await tracker.wait();  // every handler's waits end on `abort`
    }
    std::printf("closed idle %d, unanswered %d\n", counts.closed_idle.load(),
                counts.closed_unanswered.load());
    if (!self_test) co_return refused;
    int served = 0;
    for (auto& c : clients) {
        if (co_await c) ++served;
    }
    bool extra_ok = true;
    if (extra_client) {
        extra_ok = co_await *extra_client;
        const bool idle_ok = counts.closed_idle == 1 && counts.closed_unanswered == 0;
        const bool half_ok = counts.closed_idle == 0 && counts.closed_unanswered == 1;
        extra_ok = extra_ok && (stalled == extra::idle ? idle_ok && drained.index() == 0
                                                       : half_ok && drained.index() == 1);
    }
    std::printf("%d of 8 requests answered after the signal; late connection %s%s\n", served,
                refused ? "refused" : "ACCEPTED",
                extra_client ? (extra_ok ? "; the stalled client was closed as it should be"
                                         : "; the stalled client was NOT handled as it should be")
                             : "");
    co_return served == 8 && refused&& extra_ok;
}

int main(int argc, char** argv) {
    blitz::config cfg;
    cfg.workers = 2;
    bool self_test = true;
    int signo = SIGTERM;
    extra stalled = extra::none;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "epoll") == 0) {
            cfg.io_backend = blitz::io_backend_kind::epoll;
        } else if (std::strcmp(argv[i], "io_uring") == 0) {  // where the kernel allows it
            cfg.io_backend = blitz::io_backend_kind::prefer_io_uring;
        } else if (std::strcmp(argv[i], "sigint") == 0) {
            signo = SIGINT;
        } else if (std::strcmp(argv[i], "idle") == 0) {
            stalled = extra::idle;
        } else if (std::strcmp(argv[i], "half") == 0) {
            stalled = extra::half;
        } else if (std::strcmp(argv[i], "serve") == 0) {
            self_test = false;
        } else {
            std::fprintf(stderr,
                         "usage: example_graceful [epoll|io_uring] [sigint] [idle|half] [serve]\n");
            return 2;
        }
    }
    blitz::runtime rt(cfg);
    const bool ok = rt.block_on(run(self_test, signo, stalled));
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
