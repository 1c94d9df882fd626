// SPDX-License-Identifier: MIT
// An echo server and its clients over loopback TCP. The server accepts connections with
// net::serve (which backs off and sheds queued clients when descriptors run out, instead of
// spinning on EMFILE) and runs one task per connection that writes back whatever it reads; a
// connection silent for 30 s is closed. 16 clients each send 100 messages and check every
// reply. Exit status 0 when every byte came back.
//
//   example_echo [BACKEND]              the self test; BACKEND is epoll or io_uring (io_uring
//                                       where the kernel allows it, else epoll; default: the
//                                       runtime's automatic selection)
//   example_echo [BACKEND] serve PORT   only the server, on 127.0.0.1:PORT (0: any free port,
//                                       printed) until SIGTERM or Ctrl-C; then prints what the
//                                       accept loop counted (accepted, exhausted, shed)

#include <blitz/blitz.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;
using namespace std::chrono_literals;

blitz::task<void> echo_connection(tcp_stream s) {
    char buf[4096];
    for (;;) {
        // A client that stays silent holds a descriptor: give it up after 30 s.
        auto r = co_await blitz::timeout(30s, s.read(buf, sizeof buf));
        if (r.timed_out()) co_return;
        const auto n = r.value();
        if (!n || *n == 0) co_return;  // an error or the end of the stream
        // A client that stops reading would hold the write forever: the same 30 s.
        auto w = co_await blitz::timeout(30s, s.write_all(std::as_bytes(std::span(buf, *n))));
        if (w.timed_out() || !w.value()) co_return;
    }
}

blitz::task<bool> client(socket_address server, int id) {
    auto s = co_await tcp_stream::connect(server);
    if (!s) {
        std::fprintf(stderr, "connect: %s\n", s.error().message().c_str());
        co_return false;
    }
    (void)s->set_nodelay(true);
    for (int m = 0; m < 100; ++m) {
        const std::string msg = "client " + std::to_string(id) + " message " + std::to_string(m);
        if (!co_await s->write_all(std::as_bytes(std::span(msg.data(), msg.size())))) {
            co_return false;
        }
        std::string back(msg.size(), '\0');
        if (!co_await s->read_exact(std::as_writable_bytes(std::span(back.data(), back.size())))) {
            co_return false;
        }
        if (back != msg) co_return false;
    }
    co_return true;
}

blitz::task<int> self_test(int clients) {
    auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
    if (!l) {
        std::fprintf(stderr, "bind: %s\n", l.error().message().c_str());
        co_return 1;
    }
    const socket_address where = *l->local_addr();
    blitz::net::serve_options o;
    auto server = blitz::spawn(blitz::net::serve(*l, echo_connection, o));
    std::vector<blitz::join_handle<bool>> cs;
    for (int i = 0; i < clients; ++i) cs.push_back(blitz::spawn(client(where, i)));
    int failed = 0;
    for (auto& c : cs) failed += !(co_await c);
    o.stop.cancel();
    co_await server;
    std::printf("echo over %s: %d clients x 100 messages, %d failed\n", where.to_string().c_str(),
                clients, failed);
    co_return failed == 0 ? 0 : 1;
}

// The server alone, until SIGTERM or SIGINT.
blitz::task<int> serve_until_signal(const std::string& port) {
    auto term = blitz::signal::signal(blitz::signal::kind::terminate);
    auto intr = blitz::signal::signal(blitz::signal::kind::interrupt);
    if (!term || !intr) {
        std::fprintf(stderr, "signal: %s\n", (!term ? term : intr).error().message().c_str());
        co_return 1;
    }
    const auto addr = socket_address::parse("127.0.0.1:" + port);
    if (!addr) {
        std::fprintf(stderr, "bad port '%s'\n", port.c_str());
        co_return 2;
    }
    auto l = tcp_listener::bind(*addr);
    if (!l) {
        std::fprintf(stderr, "bind: %s\n", l.error().message().c_str());
        co_return 1;
    }
    std::printf("listening on %s\n", l->local_addr()->to_string().c_str());
    std::fflush(stdout);
    blitz::net::serve_stats stats;
    blitz::net::serve_options o;
    o.stats = &stats;
    auto server = blitz::spawn(blitz::net::serve(*l, echo_connection, o));
    (void)co_await blitz::select(term->recv(), intr->recv());
    o.stop.cancel();
    co_await server;
    std::printf("accepted %llu, exhausted %llu, shed %llu, backoffs %llu\n",
                static_cast<unsigned long long>(stats.accepted.load()),
                static_cast<unsigned long long>(stats.exhausted.load()),
                static_cast<unsigned long long>(stats.shed.load()),
                static_cast<unsigned long long>(stats.backoffs.load()));
    if (stats.last_error) {
        std::fprintf(stderr, "accept: %s\n", stats.last_error.message().c_str());
        co_return 1;
    }
    co_return 0;
}

int main(int argc, char** argv) {
    blitz::config cfg;
    int i = 1;
    if (i < argc && std::strcmp(argv[i], "epoll") == 0) {
        cfg.io_backend = blitz::io_backend_kind::epoll;
        ++i;
    } else if (i < argc && std::strcmp(argv[i], "io_uring") == 0) {
        cfg.io_backend = blitz::io_backend_kind::prefer_io_uring;  // epoll where it is refused
        ++i;
    }
    const bool serve = i < argc && std::strcmp(argv[i], "serve") == 0;
    if ((serve && i + 2 != argc) || (!serve && i != argc)) {
        std::fprintf(stderr, "usage: example_echo [epoll|io_uring] [serve PORT]\n");
        return 2;
    }
    blitz::runtime rt(cfg);
    std::printf("I/O backend: %s\n", rt.metrics().io_backend.c_str());
    std::fflush(stdout);
    if (serve) return rt.block_on(serve_until_signal(argv[i + 1]));
    return rt.block_on(self_test(16));
}
