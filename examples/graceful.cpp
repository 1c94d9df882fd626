// SPDX-License-Identifier: MIT
// A server with a graceful shutdown. Each request takes 100 ms to serve. On SIGTERM or Ctrl-C
// (SIGINT) the server stops accepting (new connections are refused), lets every request in
// flight finish and answer, and the program exits 0. A second Ctrl-C during the drain kills
// it at once (restore_default_after_first). The connection handlers run under a task_tracker;
// the accept loop (net::serve) stops when its cancellation_token is cancelled.
//
//   example_graceful [epoll] [sigint]   the server and 8 clients of its own in one process: the
//                             program raises SIGTERM (or SIGINT, as Ctrl-C does) while the 8
//                             requests are in flight; exit 0 when every client got its reply
//                             and a late connection was refused. epoll: on the epoll backend
//   example_graceful serve    just the server: prints its port and serves until SIGTERM or
//                             Ctrl-C (try it: nc 127.0.0.1 PORT, type a line, press Ctrl-C in
//                             the server's terminal before the reply)

#include <blitz/blitz.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;

// One connection: a request line in, 100 ms of work, "done: <request>" out.
blitz::task<void> handle(tcp_stream s) {
    std::string line;
    char buf[256];
    while (line.find('\n') == std::string::npos) {
        auto n = co_await s.read(buf, sizeof buf);
        if (!n || *n == 0) co_return;
        line.append(buf, *n);
    }
    co_await blitz::sleep(std::chrono::milliseconds(100));
    const std::string reply = "done: " + line;
    (void)co_await s.write_all(std::as_bytes(std::span(reply.data(), reply.size())));
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

blitz::task<bool> run(bool self_test, int raise_signo) {
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
    blitz::cancellation_token stop;
    blitz::task_tracker tracker;
    blitz::net::serve_options o;
    o.stop = stop;
    auto server = blitz::spawn(blitz::net::serve(
        *listener, [&tracker](tcp_stream s) { return tracker.track(handle(std::move(s))); }, o));

    std::vector<blitz::join_handle<bool>> clients;
    if (self_test) {
        for (int i = 0; i < 8; ++i) clients.push_back(blitz::spawn(client(where, i)));
        co_await blitz::sleep(std::chrono::milliseconds(30));  // the requests are in flight
        ::raise(raise_signo);
    } else {
        std::printf("listening on port %u; stop with Ctrl-C or SIGTERM\n", where.port());
        std::fflush(stdout);
    }

    // The shutdown: the first signal, then stop accepting, then let the handlers finish.
    auto which = co_await blitz::select(sigterm->recv(), sigint->recv());
    std::printf("%s: stop accepting, %zu requests in flight\n",
                which.index() == 0 ? "SIGTERM" : "SIGINT", tracker.size());
    stop.cancel();
    co_await server;
    listener.reset();  // closed: new connections are refused
    const bool refused = !(co_await tcp_stream::connect(where));
    tracker.close();
    co_await tracker.wait();
    if (!self_test) co_return refused;
    int served = 0;
    for (auto& c : clients) {
        if (co_await c) ++served;
    }
    std::printf("%d of 8 requests answered after the signal; late connection %s\n", served,
                refused ? "refused" : "ACCEPTED");
    co_return served == 8 && refused;
}

int main(int argc, char** argv) {
    blitz::config cfg;
    cfg.workers = 2;
    bool self_test = true;
    int signo = SIGTERM;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "epoll") == 0) {
            cfg.io_backend = blitz::io_backend_kind::epoll;
        } else if (std::strcmp(argv[i], "sigint") == 0) {
            signo = SIGINT;
        } else if (std::strcmp(argv[i], "serve") == 0) {
            self_test = false;
        } else {
            std::fprintf(stderr, "usage: example_graceful [epoll] [sigint] [serve]\n");
            return 2;
        }
    }
    blitz::runtime rt(cfg);
    const bool ok = rt.block_on(run(self_test, signo));
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
