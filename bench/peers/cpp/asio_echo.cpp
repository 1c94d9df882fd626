// SPDX-License-Identifier: MIT
// The Asio peer of the I/O benchmark rows: C++20 coroutines (co_spawn, use_awaitable), one
// io_context run by --threads threads (Asio's reactor: epoll). Built a second time with
// -DASIO_HAS_IO_URING -DASIO_DISABLE_EPOLL for its io_uring backend. --http 1: the minimal
// HTTP/1.1 responder of the wrk row instead (bench/tools/http_min.hpp). Prints "port N", serves
// until standard input closes.
#include <asio.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "../../tools/http_min.hpp"

using asio::ip::tcp;

asio::awaitable<void> echo(tcp::socket s) {
    s.set_option(tcp::no_delay(true));
    char buf[16384];
    try {
        for (;;) {
            const std::size_t n =
                co_await s.async_read_some(asio::buffer(buf), asio::use_awaitable);
            co_await asio::async_write(s, asio::buffer(buf, n), asio::use_awaitable);
        }
    } catch (const std::exception&) {
    }
}

asio::awaitable<void> http(tcp::socket s) {
    s.set_option(tcp::no_delay(true));
    char buf[16384];
    int matched = 0;
    std::string out;
    try {
        for (;;) {
            const std::size_t n =
                co_await s.async_read_some(asio::buffer(buf), asio::use_awaitable);
            const std::size_t heads = http_min::heads_ended(std::string_view(buf, n), matched);
            if (heads == 0) continue;
            http_min::responses(heads, out);
            co_await asio::async_write(s, asio::buffer(out), asio::use_awaitable);
        }
    } catch (const std::exception&) {
    }
}

asio::awaitable<void> accept_loop(tcp::acceptor& a, bool use_http) {
    for (;;) {
        tcp::socket s = co_await a.async_accept(asio::use_awaitable);
        if (use_http) {
            asio::co_spawn(a.get_executor(), http(std::move(s)), asio::detached);
        } else {
            asio::co_spawn(a.get_executor(), echo(std::move(s)), asio::detached);
        }
    }
}

int main(int argc, char** argv) {
    int threads = 1;
    unsigned short port = 0;
    bool use_http = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--threads") threads = std::atoi(argv[i + 1]);
        if (a == "--port") port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
        if (a == "--http") use_http = std::atoi(argv[i + 1]) != 0;
    }
    asio::io_context io(threads);
    tcp::acceptor acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    std::printf("port %u\n", acc.local_endpoint().port());
    std::fflush(stdout);
    asio::co_spawn(io, accept_loop(acc, use_http), asio::detached);
    auto guard = asio::make_work_guard(io);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i) ts.emplace_back([&] { io.run(); });
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    io.stop();
    for (auto& t : ts) t.join();
    std::printf("{}\n");
    return 0;
}
