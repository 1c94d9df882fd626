// SPDX-License-Identifier: MIT
// The Asio peer: the spawn-style workloads as handlers posted to one asio::io_context run by N
// threads (libasio-dev, standalone Asio). A "task" is a posted handler; there is no join
// handle, so completion is a counter and a semaphore, as in the blitz definitions.

#include <asio.hpp>
#include <atomic>
#include <memory>
#include <semaphore>
#include <thread>

#include "peer_main.hpp"

namespace {

using namespace std::chrono_literals;
using done_signal = std::counting_semaphore<1 << 20>;

// One io_context and its threads for the whole process (as a runtime is for the others).
struct pool {
    asio::io_context ctx;
    asio::executor_work_guard<asio::io_context::executor_type> guard{ctx.get_executor()};
    std::vector<std::thread> threads;
    explicit pool(unsigned n) : ctx(static_cast<int>(n)) {
        for (unsigned i = 0; i < n; ++i) threads.emplace_back([this] { ctx.run(); });
    }
    ~pool() {
        guard.reset();
        ctx.stop();
        for (auto& t : threads) t.join();
    }
};

pool& the_pool(unsigned n) {
    static pool p(n);
    return p;
}

void stall() {
    const auto start = peer::steady::now();
    while (peer::steady::now() - start < 10us) std::this_thread::yield();
}

peer::rep spawn_many_local(unsigned w) {
    auto& p = the_pool(w);
    std::atomic<int> rem{10'000};
    done_signal done(0);
    const auto t0 = peer::steady::now();
    asio::post(p.ctx, [&] {
        for (int i = 0; i < 10'000; ++i) {
            asio::post(p.ctx, [&] {
                if (rem.fetch_sub(1, std::memory_order_relaxed) == 1) done.release();
            });
        }
    });
    done.acquire();
    return peer::timed(peer::since(t0));
}

peer::rep spawn_remote(unsigned w, int n) {
    auto& p = the_pool(w);
    std::atomic<int> rem{n};
    done_signal done(0);
    const auto t0 = peer::steady::now();
    for (int i = 0; i < n; ++i) {
        asio::post(p.ctx, [&] {
            if (rem.fetch_sub(1, std::memory_order_relaxed) == 1) done.release();
        });
    }
    done.acquire();
    return peer::timed(peer::since(t0));
}

// Background handlers that stall 10 us and re-post themselves (a yield) until told to stop.
struct reposter {
    asio::io_context& ctx;
    std::atomic<bool>& busy;
    std::atomic<int>& live;
    void operator()() const {
        if (!busy.load(std::memory_order_relaxed)) {
            live.fetch_sub(1, std::memory_order_release);
            return;
        }
        stall();
        asio::post(ctx, *this);
    }
};

peer::rep spawn_busy(unsigned w, unsigned background, int n) {
    auto& p = the_pool(w);
    std::atomic<bool> busy{true};
    std::atomic<int> live{static_cast<int>(background)};
    for (unsigned i = 0; i < background; ++i) asio::post(p.ctx, reposter{p.ctx, busy, live});
    const peer::rep r = spawn_remote(w, n);
    busy = false;
    while (live.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    return r;
}

peer::rep yield_many(unsigned w) {
    auto& p = the_pool(w);
    done_signal done(0);
    struct yielder {
        asio::io_context& ctx;
        done_signal& done;
        int left;
        void operator()() {
            if (left-- == 0) {
                done.release();
                return;
            }
            asio::post(ctx, *this);
        }
    };
    const auto t0 = peer::steady::now();
    for (int t = 0; t < 200; ++t) asio::post(p.ctx, yielder{p.ctx, done, 1'000});
    for (int t = 0; t < 200; ++t) done.acquire();
    return peer::timed(peer::since(t0));
}

peer::rep chained_spawn(unsigned w) {
    auto& p = the_pool(w);
    done_signal done(0);
    struct link {
        asio::io_context& ctx;
        done_signal& done;
        int n;
        void operator()() const {
            if (n == 0) {
                done.release();
            } else {
                asio::post(ctx, link{ctx, done, n - 1});
            }
        }
    };
    const auto t0 = peer::steady::now();
    asio::post(p.ctx, link{p.ctx, done, 1'000});
    done.acquire();
    return peer::timed(peer::since(t0));
}

// A plain thread posts to an idle io_context (its threads blocked) after 1 ms.
peer::rep wake_latency(unsigned w) {
    auto& p = the_pool(w);
    peer::rep r;
    for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(1ms);
        std::binary_semaphore done(0);
        double ns = 0;
        const auto sent = peer::steady::now();
        asio::post(p.ctx, [&] {
            ns = peer::since(sent);
            done.release();
        });
        done.acquire();
        r.samples.push_back(ns);
    }
    r.ns = peer::median(r.samples);
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string version = "asio " + std::to_string(ASIO_VERSION / 100000) + "." +
                                std::to_string(ASIO_VERSION / 100 % 1000) + "." +
                                std::to_string(ASIO_VERSION % 100) + " (Debian libasio-dev)";
    const std::vector<peer::workload> all = {
        {"spawn_many_local", "scheduler", 10'000, spawn_many_local},
        {"spawn_many_remote_idle", "scheduler", 10'000,
         [](unsigned w) { return spawn_remote(w, 10'000); }},
        {"spawn_many_remote_busy1", "scheduler", 10'000,
         [](unsigned w) { return spawn_busy(w, 2 * w, 10'000); }},
        {"spawn_many_remote_busy2", "scheduler", 1'000,
         [](unsigned w) { return spawn_busy(w, w, 1'000); }},
        {"yield_many", "scheduler", 200'000, yield_many},
        {"chained_spawn", "scheduler", 1'000, chained_spawn},
        {"wake_latency", "latency", 1, wake_latency},
    };
    return peer::main("asio", version, all, argc, argv);
}
