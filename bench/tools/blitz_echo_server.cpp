// SPDX-License-Identifier: MIT
// The blitz side of the I/O benchmark rows (scripts/bench_io.py): an echo server on
// 127.0.0.1, one task per connection reading and writing back.
//
//   blitz_echo_server --workers W --backend epoll|io_uring|automatic [--port P]
//                     [--mode borrowed|owned|pooled|http] [--io-mode shared|busy]
//                     [--worker-rings on|off] [--sends readiness|batched]
//                     [--pin CPU] [--park-spin NS] [--park-spin-adaptive on|off]
// --pin binds the workers to that OS CPU (placement list); busy mode needs it. --sends batched
// sets config io_batched_sends (write_all as SEND operations staged on the worker's ring).
// --park-spin sets config park_spin (how long an idle worker looks for work, I/O included,
// before it sleeps) and --park-spin-adaptive its adaptive budget (on by default).
//
// borrowed (the default): read and write_all on a buffer in the task's frame (on io_uring with
// worker rings reads are multishot receives copied out, writes readiness-based unless
// --sends batched). owned: read_owned and write_owned (completion operations on io_uring).
// pooled: read_pooled (a multishot receive on the provided-buffer ring on io_uring) and
// write_all. http: the minimal HTTP/1.1 responder of the wrk row (http_min.hpp), borrowed
// reads.
//
// Prints "port N" once listening, serves until its standard input closes, then prints the I/O
// driver's counters as one JSON line (for syscalls per request).

#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "http_min.hpp"

using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;

blitz::task<void> echo(tcp_stream s) {
    (void)s.set_nodelay(true);
    char buf[16384];
    for (;;) {
        auto n = co_await s.read(buf, sizeof buf);
        if (!n || *n == 0) co_return;
        if (!co_await s.write_all(std::as_bytes(std::span(buf, *n)))) co_return;
    }
}

blitz::task<void> echo_owned(tcp_stream s) {
    (void)s.set_nodelay(true);
    blitz::owned_buffer buf(16384);
    for (;;) {
        auto [n, got] = co_await s.read_owned(std::move(buf));
        if (!n || *n == 0) co_return;
        auto [w, back] = co_await s.write_owned(std::move(got));
        if (!w) co_return;
        if (*w < back.size() && !co_await s.write_all(back.bytes().subspan(*w))) co_return;
        buf = std::move(back);  // a short send (rare on loopback) finished above
    }
}

blitz::task<void> echo_pooled(tcp_stream s) {
    (void)s.set_nodelay(true);
    for (;;) {
        auto b = co_await s.read_pooled();
        if (!b || b->empty()) co_return;
        if (!co_await s.write_all(b->bytes())) co_return;
    }
}

blitz::task<void> http(tcp_stream s) {
    (void)s.set_nodelay(true);
    char buf[16384];
    int matched = 0;
    std::string out;
    for (;;) {
        auto n = co_await s.read(buf, sizeof buf);
        if (!n || *n == 0) co_return;
        const std::size_t heads = http_min::heads_ended(std::string_view(buf, *n), matched);
        if (heads == 0) continue;
        http_min::responses(heads, out);
        if (!co_await s.write_all(std::as_bytes(std::span(out.data(), out.size())))) co_return;
    }
}

int main(int argc, char** argv) {
    blitz::config cfg;
    cfg.workers = 1;
    int port = 0;
    std::string mode = "borrowed";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--workers") {
            cfg.workers = static_cast<unsigned>(std::stoul(v));
        } else if (a == "--mode") {
            mode = v;
        } else if (a == "--port") {
            port = std::stoi(v);
        } else if (a == "--io-mode") {
            cfg.io_mode = v == "busy" ? blitz::io_mode_kind::busy : blitz::io_mode_kind::shared;
        } else if (a == "--pin") {
            cfg.topology.policy = blitz::placement_policy::list;
            cfg.topology.pus.assign(cfg.workers, static_cast<unsigned>(std::stoul(v)));
        } else if (a == "--worker-rings") {
            cfg.io_worker_rings = v != "off";
        } else if (a == "--sends") {
            cfg.io_batched_sends = v == "batched";
        } else if (a == "--park-spin") {
            cfg.park_spin = std::chrono::nanoseconds(std::stoll(v));
        } else if (a == "--park-spin-adaptive") {
            cfg.park_spin_adaptive = v != "off";
        } else if (a == "--backend") {
            cfg.io_backend = v == "epoll"      ? blitz::io_backend_kind::epoll
                             : v == "io_uring" ? blitz::io_backend_kind::io_uring
                                               : blitz::io_backend_kind::automatic;
        }
    }
    blitz::runtime rt(cfg);
    auto l = rt.block_on([](int port) -> blitz::task<blitz::io_result<tcp_listener>> {
        co_return tcp_listener::bind(
            *socket_address::ip("127.0.0.1", static_cast<std::uint16_t>(port)));
    }(port));
    if (!l) {
        std::fprintf(stderr, "bind: %s\n", l.error().message().c_str());
        return 1;
    }
    std::printf("port %u\n", rt.block_on([](tcp_listener& l) -> blitz::task<unsigned> {
        co_return l.local_addr()->port();
    }(*l)));
    std::fflush(stdout);
    blitz::cancellation_token stop;
    blitz::net::serve_options o;
    o.stop = stop;
    blitz::task<void> (*handler)(tcp_stream) = mode == "owned"    ? echo_owned
                                               : mode == "pooled" ? echo_pooled
                                               : mode == "http"   ? http
                                                                  : echo;
    auto server = rt.spawn(blitz::net::serve(*l, handler, o));
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    stop.cancel();
    server.join();
    const blitz::runtime_metrics m = rt.metrics();
    std::printf(
        "{\"backend\": \"%s\", \"io_turns\": %llu, \"io_events\": %llu, \"io_waits\": %llu, "
        "\"io_submits\": %llu, \"io_wakes\": %llu, \"io_mode\": \"%s\", \"parks\": %llu, "
        "\"busy_polls\": %llu, \"ring_ops\": %llu, \"ring_enters\": %llu, \"pool_arms\": %llu, "
        "\"pool_chunks\": %llu, \"pool_fallbacks\": %llu, \"io_rings\": \"%s\"}\n",
        m.io_backend.c_str(), static_cast<unsigned long long>(m.io_turns),
        static_cast<unsigned long long>(m.io_events),
        static_cast<unsigned long long>(m.io_wait_calls),
        static_cast<unsigned long long>(m.io_submit_calls),
        static_cast<unsigned long long>(m.io_wake_calls), m.io_mode.c_str(),
        static_cast<unsigned long long>(m.total(&blitz::worker_metrics::parks)),
        static_cast<unsigned long long>(m.total(&blitz::worker_metrics::busy_polls)),
        static_cast<unsigned long long>(m.io_worker_ring_ops),
        static_cast<unsigned long long>(m.io_worker_ring_enters),
        static_cast<unsigned long long>(m.io_pool_arms),
        static_cast<unsigned long long>(m.io_pool_chunks),
        static_cast<unsigned long long>(m.io_pool_fallbacks), m.io_rings.c_str());
    return 0;
}
