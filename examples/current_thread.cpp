// SPDX-License-Identifier: MIT
// A current-thread runtime (Tokio's new_current_thread): no threads of its own; every task,
// timer and socket runs on the thread that calls block_on. Here a TCP server and its clients
// run on main's thread, a second thread hands work in with rt.spawn (queued, and it wakes the
// driver), and the shutdown gives the server a deadline. Exit status 0 when every client got
// its answer and nothing ran on another thread.
//
//   build/release/example_current_thread [epoll|io_uring]

#include <atomic>
#include <blitz/blitz.hpp>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using blitz::net::socket_address;
using blitz::net::tcp_listener;
using blitz::net::tcp_stream;

// Uppercases what it reads until the client closes; a client silent for 5 s is dropped.
blitz::task<void> serve_one(tcp_stream s) {
    char buf[1024];
    for (;;) {
        auto n = co_await blitz::timeout(5s, s.read(buf, sizeof buf));
        if (n.timed_out() || !n.value() || *n.value() == 0) co_return;  // stalled, error, or EOF
        const std::size_t got = *n.value();
        for (std::size_t i = 0; i < got; ++i) {
            buf[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(buf[i])));
        }
        auto w = co_await blitz::timeout(5s, s.write_all(std::as_bytes(std::span(buf, got))));
        if (w.timed_out() || !w.value()) co_return;  // a client that stopped reading
    }
}

// The accept loop: blitz::net::serve (EMFILE and the like are waited out, never spun on) until
// `stop` is cancelled; each connection is tracked for the graceful shutdown.
blitz::task<void> server(tcp_listener l, blitz::cancellation_token stop, blitz::task_tracker& t) {
    blitz::net::serve_options o;
    o.stop = stop;
    co_await blitz::net::serve(
        l, [&t](tcp_stream s) -> blitz::task<void> { return t.track(serve_one(std::move(s))); }, o);
}

blitz::task<std::string> client(socket_address where, std::string msg) {
    auto s = co_await tcp_stream::connect(where);
    if (!s) co_return "connect: " + s.error().message();
    auto w = co_await s->write_all(std::as_bytes(std::span(msg.data(), msg.size())));
    if (!w) co_return "write: " + w.error().message();
    std::string back(msg.size(), '\0');
    auto r = co_await s->read_exact(std::as_writable_bytes(std::span(back.data(), back.size())));
    if (!r) co_return "read: " + r.error().message();
    co_return back;
}

int main(int argc, char** argv) {
    blitz::config c = blitz::config::current_thread();
    if (argc > 1 && std::strcmp(argv[1], "epoll") == 0)
        c.io_backend = blitz::io_backend_kind::epoll;
    if (argc > 1 && std::strcmp(argv[1], "io_uring") == 0) {
        c.io_backend = blitz::io_backend_kind::prefer_io_uring;
    }
    blitz::runtime rt(c);
    const auto main_thread = std::this_thread::get_id();
    std::atomic<bool> elsewhere{false};

    blitz::cancellation_token stop;
    blitz::task_tracker connections;
    // Sockets belong to a runtime: bind inside a task. The server task stays queued on the
    // runtime when this block_on returns, and runs during the next one.
    const std::optional<socket_address> bound =
        rt.block_on([](blitz::cancellation_token stop,
                       blitz::task_tracker& t) -> blitz::task<std::optional<socket_address>> {
            auto l = tcp_listener::bind(*socket_address::parse("127.0.0.1:0"));
            if (!l) {
                std::fprintf(stderr, "bind: %s\n", l.error().message().c_str());
                co_return std::nullopt;
            }
            const socket_address where = *l->local_addr();
            blitz::spawn(server(std::move(*l), stop, t)).detach();
            co_return where;
        }(stop, connections));
    if (!bound) return 1;
    const socket_address where = *bound;

    // Another thread hands in a client: rt.spawn from there queues it and wakes the driver, so
    // it runs on main's thread, inside the block_on below; its answer comes back on a oneshot.
    auto [answer_tx, answer_rx] = blitz::oneshot<std::string>();
    std::thread feeder([&rt, where, main_thread, &elsewhere, tx = std::move(answer_tx)]() mutable {
        rt.spawn([](socket_address where, std::thread::id main_thread, std::atomic<bool>& elsewhere,
                    blitz::oneshot_sender<std::string> tx) -> blitz::task<void> {
              if (std::this_thread::get_id() != main_thread) elsewhere = true;
              const std::string msg = "from another thread";
              std::string got = co_await client(where, msg);
              (void)std::move(tx).send(std::move(got));
          }(where, main_thread, elsewhere, std::move(tx)))
            .detach();
    });

    const int good = rt.block_on(
        [](socket_address where, blitz::oneshot_receiver<std::string> fed) -> blitz::task<int> {
            int ok = 0;
            for (int i = 0; i < 8; ++i) {
                const std::string msg = "hello " + std::to_string(i);
                std::string upper = msg;
                for (char& ch : upper) ch = static_cast<char>(std::toupper(ch));
                const std::string got = co_await client(where, msg);
                ok += got == upper;
            }
            auto from_feeder = co_await fed;  // runs here too, whenever the feeder spawned it
            std::printf("current_thread: the feeder's client got \"%s\"\n",
                        from_feeder.value_or("(nothing)").c_str());
            ok += from_feeder == std::optional<std::string>("FROM ANOTHER THREAD");
            co_return ok;
        }(where, std::move(answer_rx)));
    feeder.join();
    // The graceful stop: the server stops accepting, its connections get 2 s to finish.
    const bool in_time = rt.shutdown_timeout(2s, &connections, &stop);
    std::printf("current_thread: %d of 9 clients answered on main's thread; shutdown %s\n", good,
                in_time ? "in time" : "past its deadline");
    return good == 9 && in_time && !elsewhere.load() ? 0 : 1;
}
