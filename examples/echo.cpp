// SPDX-License-Identifier: MIT
// An echo server and its clients over loopback TCP. The server accepts connections and spawns
// one task per connection that writes back whatever it reads; 16 clients each send 100
// messages and check every reply. Exit status 0 when every byte came back.
//
//   example_echo                 automatic backend (io_uring where allowed, else epoll)
//   example_echo epoll           force epoll
//   example_echo serve PORT      run only the server on 127.0.0.1:PORT until killed

#include <blitz/blitz.hpp>
#include <cstdio>
#include <cstring>
#include <string>

using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;

blitz::task<void> echo_connection(tcp_stream s) {
    char buf[4096];
    for (;;) {
        auto n = co_await s.read(buf, sizeof buf);
        if (!n || *n == 0) co_return;  // an error or the end of the stream
        auto w = co_await s.write_all(std::as_bytes(std::span(buf, *n)));
        if (!w) co_return;
    }
}

blitz::task<void> serve(tcp_listener listener, int connections) {
    for (int i = 0; connections < 0 || i < connections; ++i) {
        auto s = co_await listener.accept();
        if (!s) {
            std::fprintf(stderr, "accept: %s\n", s.error().message().c_str());
            continue;
        }
        blitz::spawn(echo_connection(std::move(*s))).detach();
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

blitz::task<int> run(int clients) {
    auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
    if (!l) {
        std::fprintf(stderr, "bind: %s\n", l.error().message().c_str());
        co_return 1;
    }
    const socket_address where = *l->local_addr();
    auto server = blitz::spawn(serve(std::move(*l), clients));
    std::vector<blitz::join_handle<bool>> cs;
    for (int i = 0; i < clients; ++i) cs.push_back(blitz::spawn(client(where, i)));
    int failed = 0;
    for (auto& c : cs) failed += !(co_await c);
    co_await server;
    std::printf("echo over %s: %d clients x 100 messages, %d failed\n", where.to_string().c_str(),
                clients, failed);
    co_return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
    blitz::config cfg;
    if (argc > 1 && std::strcmp(argv[1], "epoll") == 0)
        cfg.io_backend = blitz::io_backend_kind::epoll;
    blitz::runtime rt(cfg);
    std::printf("I/O backend: %s\n", rt.metrics().io_backend.c_str());
    if (argc > 2 && std::strcmp(argv[1], "serve") == 0) {
        auto l = rt.block_on([](std::string port) -> blitz::task<blitz::io_result<tcp_listener>> {
            co_return tcp_listener::bind(*socket_address::parse("127.0.0.1:" + port));
        }(argv[2]));
        if (!l) return 1;
        rt.block_on(serve(std::move(*l), -1));
        return 0;
    }
    return rt.block_on(run(16));
}
