// SPDX-License-Identifier: MIT
// A line-based chat server: every line a client sends goes to every connected client, through a
// broadcast channel. Each connection is split: one task reads the client's lines and publishes
// them, another writes what is published to the client. The program runs the server and 8
// clients that each say 20 lines, and checks that every client heard all 160. Exit status 0 on
// success.
//
//   example_chat [epoll|io_uring]   the backend: automatic selection by default; epoll forced;
//                                   io_uring where the kernel allows it, else epoll

#include <atomic>
#include <blitz/blitz.hpp>
#include <cstdio>
#include <cstring>
#include <string>

using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;

constexpr int clients = 8, lines_each = 20;

// Lines are read through blitz::buf_reader (blitz/buffered.hpp): lines().next_line() gives each
// line without its "\n" (or "\r\n"), std::nullopt at the end of the stream, and a client that
// sends more than max_line bytes without a newline gets an error instead of an unbounded buffer.
constexpr blitz::buffer_limits chat_limits{.max_line = 4096};

blitz::task<void> session(tcp_stream s, blitz::broadcast_sender<std::string> hub,
                          blitz::broadcast_receiver<std::string> feed, int id) {
    auto [r, w] = s.split();
    // The writer: whatever the hub publishes goes to this client, until the hub closes or the
    // client is gone.
    auto writer =
        blitz::spawn([](blitz::net::write_half w,
                        blitz::broadcast_receiver<std::string> feed) -> blitz::task<void> {
            for (;;) {
                auto m = co_await feed.recv();
                if (m.closed()) co_return;
                if (m.lagged())
                    continue;  // a slow client misses lines rather than stalling the room
                const std::string& line = m.value();
                if (!co_await w.write_all(std::as_bytes(std::span(line.data(), line.size())))) {
                    co_return;
                }
            }
        }(w, std::move(feed)));
    blitz::buf_reader in(r, 4096, chat_limits);
    auto lines = in.lines();
    for (;;) {
        auto line = co_await lines.next_line();
        if (!line || !*line) break;  // an error (a line too long), or the client left
        hub.send("user" + std::to_string(id) + ": " + **line + "\n");
    }
    writer.abort();  // the client left
    try {
        co_await writer;
    } catch (const blitz::task_cancelled&) {
    }
}

blitz::task<int> client(socket_address where, blitz::cancellation_token go) {
    auto s = co_await tcp_stream::connect(where);
    if (!s) co_return 0;
    auto [r, w] = s->split();
    co_await go.cancelled();  // everyone is connected and subscribed: nobody misses a line
    for (int i = 0; i < lines_each; ++i) {
        const std::string line = "line " + std::to_string(i) + "\n";
        if (!co_await w.write_all(std::as_bytes(std::span(line.data(), line.size())))) co_return 0;
    }
    int heard = 0;
    blitz::buf_reader in(r, 4096, chat_limits);
    auto lines = in.lines();
    // (Not `while (heard < n && co_await ...)`: g++ 12 miscompiles a co_await on the right of
    // a short-circuit && -- the coroutine never resumes after the loop; clang 19 is correct.)
    while (heard < clients * lines_each) {
        auto line = co_await lines.next_line();
        if (!line || !*line) break;
        ++heard;
    }
    co_return heard;
}

blitz::task<int> run() {
    auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
    if (!l) co_return 1;
    const socket_address where = *l->local_addr();
    // The hub keeps enough lines that nobody lags here; each session subscribes its own feed.
    blitz::broadcast_sender<std::string> hub =
        blitz::broadcast<std::string>(clients * lines_each + 16).first;
    blitz::cancellation_token go;  // used as a latch: cancelled() completes once it is set
    std::vector<blitz::join_handle<int>> cs;
    for (int i = 0; i < clients; ++i) cs.push_back(blitz::spawn(client(where, go)));
    // The accept loop is net::serve (it backs off and sheds queued clients when descriptors
    // run out); each session subscribes as it is accepted, and the last one opens the room.
    blitz::cancellation_token stop, all_in;
    blitz::task_tracker sessions;
    std::atomic<int> joined{0};  // each connection's task calls the handler, on any worker
    blitz::net::serve_options o;
    o.stop = stop;
    auto server = blitz::spawn(blitz::net::serve(
        *l,
        [&](tcp_stream s) {
            const int id = joined++;
            auto t = sessions.track(session(std::move(s), hub, hub.subscribe(), id));
            if (id + 1 == clients) all_in.cancel();
            return t;
        },
        o));
    co_await all_in.cancelled();
    go.cancel();
    int ok = 0;
    for (auto& c : cs) ok += (co_await c) == clients * lines_each;
    stop.cancel();
    co_await server;
    sessions.close();
    co_await sessions.wait();  // each ends when its client closes
    std::printf("chat: %d of %d clients heard all %d lines\n", ok, clients, clients * lines_each);
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
