// SPDX-License-Identifier: MIT
// A TCP proxy: every connection to the proxy gets its own connection to the upstream server,
// and two tasks copy bytes, one per direction, each shutting down the other side's write half
// when its source ends (half-close passes through). The program runs an upstream that
// uppercases what it reads, the proxy, and 8 clients that each send 64 KiB through the proxy
// and check what comes back. Exit status 0 on success.
//
//   example_proxy [epoll|io_uring]   the backend: automatic selection by default; epoll forced;
//                                    io_uring where the kernel allows it, else epoll

#include <blitz/blitz.hpp>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;

// Copies from `from` to `to` until the end of `from`, then half-closes `to`. Bytes copied.
blitz::task<std::size_t> pipe(blitz::net::read_half from, blitz::net::write_half to) {
    char buf[16384];
    std::size_t total = 0;
    for (;;) {
        auto n = co_await from.read(buf, sizeof buf);
        if (!n || *n == 0) break;
        if (!co_await to.write_all(std::as_bytes(std::span(buf, *n)))) break;
        total += *n;
    }
    (void)to.shutdown();
    co_return total;
}

blitz::task<void> relay(tcp_stream client, socket_address upstream) {
    auto up = co_await tcp_stream::connect(upstream);
    if (!up) co_return;  // the client sees the end
    auto [cr, cw] = client.split();
    auto [ur, uw] = up->split();
    auto there = blitz::spawn(pipe(cr, uw));
    co_await pipe(ur, cw);
    co_await there;
}

// The upstream: uppercases each connection's bytes back to it until the end.
blitz::task<void> upper(tcp_stream s) {
    char buf[4096];
    for (;;) {
        auto n = co_await s.read(buf, sizeof buf);
        if (!n || *n == 0) break;
        for (std::size_t i = 0; i < *n; ++i) buf[i] = static_cast<char>(std::toupper(buf[i]));
        if (!co_await s.write_all(std::as_bytes(std::span(buf, *n)))) break;
    }
}

blitz::task<bool> client(socket_address proxy, int id) {
    auto s = co_await tcp_stream::connect(proxy);
    if (!s) co_return false;
    std::string msg;
    while (msg.size() < 65536) msg += "client " + std::to_string(id) + " says hello; ";
    auto [r, w] = s->split();
    auto sender =
        blitz::spawn([](blitz::net::write_half w, const std::string& msg) -> blitz::task<bool> {
            const bool ok =
                (co_await w.write_all(std::as_bytes(std::span(msg.data(), msg.size())))).ok();
            (void)w.shutdown();  // the end passes through the proxy to the upstream
            co_return ok;
        }(w, msg));
    std::string back;
    char buf[8192];
    for (;;) {
        auto n = co_await r.read(buf, sizeof buf);
        if (!n || *n == 0) break;
        back.append(buf, *n);
    }
    const bool sent = co_await sender;
    std::string want = msg;
    for (char& c : want) c = static_cast<char>(std::toupper(c));
    co_return sent&& back == want;
}

blitz::task<int> run() {
    constexpr int clients = 8;
    auto up = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
    auto px = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
    if (!up || !px) co_return 1;
    const socket_address upstream = *up->local_addr(), proxy = *px->local_addr();
    // Both accept loops are net::serve: out of descriptors they back off and shed queued
    // clients instead of spinning, and they end when `stop` is cancelled. The connections run
    // under trackers, so the program can wait for the last relay to finish.
    blitz::cancellation_token stop;
    blitz::task_tracker relays, uppers;
    blitz::net::serve_options o;
    o.stop = stop;
    auto upstream_task = blitz::spawn(blitz::net::serve(
        *up, [&uppers](tcp_stream s) { return uppers.track(upper(std::move(s))); }, o));
    auto proxy_task = blitz::spawn(blitz::net::serve(
        *px,
        [&relays, upstream](tcp_stream s) { return relays.track(relay(std::move(s), upstream)); },
        o));
    std::vector<blitz::join_handle<bool>> cs;
    for (int i = 0; i < clients; ++i) cs.push_back(blitz::spawn(client(proxy, i)));
    int ok = 0;
    for (auto& c : cs) ok += co_await c;
    stop.cancel();
    co_await proxy_task;
    co_await upstream_task;
    relays.close();
    uppers.close();
    co_await relays.wait();
    co_await uppers.wait();
    std::printf("proxy: %d of %d clients got their 64 KiB back through the proxy\n", ok, clients);
    co_return ok == clients ? 0 : 1;
}

int main(int argc, char** argv) {
    blitz::config cfg;
    if (argc > 1 && std::strcmp(argv[1], "epoll") == 0)
        cfg.io_backend = blitz::io_backend_kind::epoll;
    if (argc > 1 && std::strcmp(argv[1], "io_uring") == 0)  // where the kernel allows it
        cfg.io_backend = blitz::io_backend_kind::prefer_io_uring;
    blitz::runtime rt(cfg);
    return rt.block_on(run());
}
