// SPDX-License-Identifier: MIT
#include "top.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "blitz/blitz.hpp"
#include "json_reader.hpp"
#include "rt/inspect_server.hpp"

namespace blitz::cli {
namespace {

using report::json_value;

// One request on a fresh connection (inspect_server's protocol); throws with the reason.
std::string ask_socket(const std::string& path, const std::string& request) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof a.sun_path) {
        ::close(fd);
        throw std::runtime_error("socket path too long: " + path);
    }
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error("cannot connect to " + path + ": " + std::strerror(e) +
                                 (e == ENOENT || e == ECONNREFUSED
                                      ? " (is the program running with config::inspect_socket set?)"
                                  : e == EACCES
                                      ? " (the socket serves only the user that runs the program)"
                                      : ""));
    }
    const timeval limit{10, 0};  // a dump of a big runtime takes a while; a hung one does not
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    const std::string line = request + "\n";
    if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
        ::close(fd);
        throw std::runtime_error("the program closed the connection");
    }
    ::shutdown(fd, SHUT_WR);
    std::string out;
    char buf[8192];
    for (;;) {
        const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            const int e = errno;
            ::close(fd);
            throw std::runtime_error(std::string("reading the answer: ") + std::strerror(e));
        }
        if (k == 0) break;
        out.append(buf, static_cast<std::size_t>(k));
    }
    ::close(fd);
    if (out.rfind("refused:", 0) == 0 || out.rfind("error:", 0) == 0) {
        throw std::runtime_error(out.substr(0, out.find('\n')));
    }
    return out;
}

std::string ns_text(double ns) {
    char buf[32];
    if (ns < 1e3) {
        std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    } else if (ns < 1e6) {
        std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    } else if (ns < 1e9) {
        std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
    } else {
        std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
    }
    return buf;
}

double num(const json_value& o, const char* key) {
    const json_value* v = o.find(key);
    return v && v->is_number() ? v->number() : 0;
}

std::string str(const json_value& o, const char* key) {
    const json_value* v = o.find(key);
    return v && v->is_string() ? v->string() : std::string();
}

std::string pct(const json_value& o, const char* hist) {
    const json_value* h = o.find(hist);
    if (!h || num(*h, "count") == 0) return "-";
    return ns_text(num(*h, "p50_ns")) + " / " + ns_text(num(*h, "p99_ns"));
}

std::string pad(std::string s, std::size_t w) {
    if (s.size() < w) s.append(w - s.size(), ' ');
    return s;
}

std::string cut(std::string s, std::size_t w) {
    if (s.size() > w) s = s.substr(0, w - 3) + "...";
    return s;
}

// The tasks table: id, state, age, polls, spawn site, what it waits on.
void task_table(std::ostream& os, const std::vector<const json_value*>& rows, unsigned n) {
    os << "  " << pad("task", 10) << pad("state", 9) << pad("age", 10) << pad("polls", 8)
       << pad("spawned at", 28) << "in / waiting on\n";
    for (unsigned i = 0; i < rows.size() && i < n; ++i) {
        const json_value& t = *rows[i];
        std::string site = "-";
        if (const json_value* s = t.find("spawn_site"); s && s->is_string()) {
            site = std::filesystem::path(s->string()).filename().string();
        }
        // The chain, outermost first, each coroutine without "(anonymous namespace)::" or its
        // parameters: "serve > read_request -> recv (fd 7)".
        std::string where;
        if (const json_value* c = t.find("chain"); c && c->is_array()) {
            for (const auto& f : c->array()) {
                std::string name = f.string();
                for (std::size_t at;
                     (at = name.find("(anonymous namespace)::")) != std::string::npos;)
                    name.erase(at, 23);
                if (const auto paren = name.find('('); paren != std::string::npos)
                    name.resize(paren);
                where += (where.empty() ? "" : " > ") + name;
            }
        }
        if (const json_value* w = t.find("waiting_on")) {
            where += (where.empty() ? "" : " -> ") + str(*w, "text");
        }
        os << "  " << pad(std::to_string(static_cast<std::uint64_t>(num(t, "id"))), 10)
           << pad(str(t, "state"), 9) << pad(ns_text(num(t, "age_ms") * 1e6), 10)
           << pad(std::to_string(static_cast<std::uint64_t>(num(t, "polls"))), 8)
           << pad(cut(site, 27), 28) << cut(where, 100) << "\n";
    }
}

std::string render(const json_value& m, const json_value& d, const std::string& lost,
                   const std::string& source, unsigned task_rows) {
    std::ostringstream os;
    const auto& workers = m.find("workers")->array();
    const std::time_t now = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof when, "%H:%M:%S", std::localtime(&now));
    os << "blitz top  " << source << "  " << when << "\n";
    os << workers.size() << " workers, I/O " << str(m, "io_backend") << " (" << str(m, "io_mode")
       << "); tasks " << static_cast<std::uint64_t>(num(m, "tasks_alive")) << " alive, "
       << static_cast<std::uint64_t>(num(m, "tasks_spawned")) << " spawned; global queue "
       << static_cast<std::uint64_t>(num(m, "global_queue_len")) << "; timers "
       << static_cast<std::uint64_t>(num(m, "timers_pending")) << " pending; I/O ops in flight "
       << static_cast<std::uint64_t>(num(m, "io_ops_in_flight")) << "; blocking "
       << static_cast<std::uint64_t>(num(m, "blocking_threads")) << " threads, "
       << static_cast<std::uint64_t>(num(m, "blocking_queued")) << " queued\n";
    os << "stalls " << static_cast<std::uint64_t>(num(m, "stalls")) << " (longest "
       << ns_text(num(m, "longest_stall_ns")) << ", "
       << static_cast<std::uint64_t>(num(m, "stalls_suppressed")) << " not reported)\n\n";
    os << "  " << pad("worker", 8) << pad("state", 8) << pad("polls", 12) << pad("steals", 9)
       << pad("stalls", 8) << pad("poll p50/p99", 22) << pad("wake->poll p50/p99", 22)
       << "I/O->poll p50/p99\n";
    for (const auto& w : workers) {
        os << "  " << pad(std::to_string(static_cast<unsigned>(num(w, "index"))), 8)
           << pad(w.find("parked")->boolean() ? "parked" : "active", 8)
           << pad(std::to_string(static_cast<std::uint64_t>(num(w, "polls"))), 12)
           << pad(std::to_string(static_cast<std::uint64_t>(num(w, "steals"))), 9)
           << pad(std::to_string(static_cast<std::uint64_t>(num(w, "stalls"))), 8)
           << pad(pct(w, "poll"), 22) << pad(pct(w, "schedule"), 22) << pct(w, "io") << "\n";
    }
    os << "  " << pad("all", 8) << pad("", 8) << pad("", 12) << pad("", 9) << pad("", 8)
       << pad(pct(m, "poll"), 22) << pad(pct(m, "schedule"), 22) << pct(m, "io") << "\n\n";

    std::vector<const json_value*> tasks;
    for (const auto& t : d.find("tasks")->array()) tasks.push_back(&t);
    const auto& missing = d.find("workers_not_answering")->array();
    os << tasks.size() << " listed tasks, "
       << static_cast<std::uint64_t>(num(d, "queued_in_run_queues")) << " in the run queues";
    if (!missing.empty()) {
        os << "; workers not answering (stalled?):";
        for (const auto& w : missing) os << " " << static_cast<unsigned>(w.number());
    }
    os << "\n";
    const auto by = [](const char* key) {
        return [key](const json_value* a, const json_value* b) {
            const double x = num(*a, key), y = num(*b, key);
            return x != y ? x > y : num(*a, "id") < num(*b, "id");
        };
    };
    std::sort(tasks.begin(), tasks.end(), by("age_ms"));
    os << "oldest\n";
    task_table(os, tasks, task_rows);
    std::sort(tasks.begin(), tasks.end(), by("polls"));
    os << "busiest (most polls)\n";
    task_table(os, tasks, task_rows);
    // The lost-task report, as the program gave it (its first line counts them).
    os << "\n" << lost;
    return os.str();
}

// --demo: a runtime of this process with a little of everything to look at.
task<void> demo_pinger(receiver<int> rx, sender<int> tx) {
    for (;;) {
        auto v = co_await rx.recv();
        if (!v) co_return;
        co_await sleep(std::chrono::milliseconds(1));
        if (!(co_await tx.send(*v + 1)).sent()) co_return;
    }
}

task<void> demo_forgotten(receiver<int> rx) {
    (void)co_await rx.recv();  // its sender is kept and never used: waits forever
}

task<void> demo_deadlocked() {
    auto [tx, rx] = channel<int>(1);
    (void)co_await rx.recv();  // its only sender is its own: provably never woken
}

task<void> demo_sleeper(std::chrono::seconds d) { co_await sleep(d); }

task<void> demo_waiter(join_handle<void> h) { co_await h; }

struct demo_runtime {
    std::string path;
    std::unique_ptr<runtime> rt;
    std::vector<join_handle<void>> handles;
    sender<int> kept;  // the forgotten task's sender, never sent on
    demo_runtime(std::string p, sender<int> k) : path(std::move(p)), kept(std::move(k)) {}
};

std::unique_ptr<demo_runtime> start_demo() {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("blitz-top-demo-" + std::to_string(::getpid()) + ".sock"))
                                 .string();
    auto [ktx, krx] = channel<int>(1);
    auto d = std::make_unique<demo_runtime>(path, std::move(ktx));
    config c;
    c.workers = 2;
    c.inspect_socket = path;
    d->rt = std::make_unique<runtime>(c);
    auto [atx, arx] = channel<int>(1);
    auto [btx, brx] = channel<int>(1);
    if (!d->rt->block_on(atx.send(0)).sent()) throw std::runtime_error("demo: send failed");
    d->handles.push_back(d->rt->spawn(demo_pinger(std::move(arx), std::move(btx))));
    d->handles.push_back(d->rt->spawn(demo_pinger(std::move(brx), std::move(atx))));
    d->handles.push_back(d->rt->spawn(demo_forgotten(std::move(krx))));
    d->handles.push_back(d->rt->spawn(demo_deadlocked()));
    for (int i = 1; i <= 3; ++i)
        d->handles.push_back(d->rt->spawn(demo_sleeper(std::chrono::seconds(600 * i))));
    auto target = d->rt->spawn(demo_sleeper(std::chrono::seconds(3600)));
    d->handles.push_back(d->rt->spawn(demo_waiter(std::move(target))));
    // Let every task reach its first wait (counted in dumps, not time).
    for (int i = 0; i < 10000 && d->rt->dump().tasks.size() < 8; ++i) std::this_thread::yield();
    return d;
}

}  // namespace

int run_top(const top_options& o) {
    std::unique_ptr<demo_runtime> demo;
    std::string path = o.attach;
    std::string source;
    if (o.demo) {
        demo = start_demo();
        path = demo->path;
        source = "demo runtime (pid " + std::to_string(::getpid()) + ")";
    } else if (!path.empty() && path.find_first_not_of("0123456789") == std::string::npos) {
        source = "pid " + path;
        path = detail::inspect_server::default_socket_path(std::stol(path), /*make_dir=*/false);
    } else {
        source = path;
    }
    const bool tty = ::isatty(STDOUT_FILENO) != 0 && o.format == "text" && !o.once;
    for (bool first = true;; first = false) {
        std::string out;
        if (o.format == "openmetrics") {
            out = ask_socket(path, "openmetrics");
        } else {
            const std::string m = ask_socket(path, "metrics");
            const std::string d = ask_socket(path, "dump");
            if (o.format == "json") {
                auto trim = [](std::string s) {
                    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
                    return s;
                };
                out = "{\"metrics\":" + trim(m) + ",\"dump\":" + trim(d) + "}\n";
            } else {
                out = render(json_value::parse(m), json_value::parse(d), ask_socket(path, "lost"),
                             source, o.tasks);
            }
        }
        if (tty) {
            std::cout << "\x1b[H\x1b[2J";  // refresh in place
        } else if (!first && o.format == "text") {
            std::cout << "\n";
        }
        std::cout << out << std::flush;
        if (o.once) return exit_pass;
        std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
    }
}

}  // namespace blitz::cli
