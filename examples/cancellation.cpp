// SPDX-License-Identifier: MIT
// Cancellation three ways: a cancellation_token that tasks watch (cooperative: they stop at a
// point of their choosing and clean up), a child token that stops one group without touching the
// rest, and abort() on a join handle (the task is dropped at its next await). blitz::scoped ties
// a group of tasks to a block of code: it returns only when all of them have ended, so they may
// borrow from the block. Exit status 0 when every task ended the way its section says.
//
//   build/release/example_cancellation

#include <atomic>
#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>

using namespace std::chrono_literals;

// Works in 1 ms steps until its token is cancelled; returns how many steps it made.
blitz::task<int> worker(blitz::cancellation_token stop) {
    int steps = 0;
    for (;;) {
        auto r = co_await blitz::select(stop.cancelled(), blitz::sleep(1ms));
        if (r.index() == 0) break;  // cancelled: stop here, at a point this task chose
        ++steps;
    }
    co_return steps;
}

blitz::task<int> run() {
    int bad = 0;

    // A token and a child: cancelling the child stops only its group; cancelling the parent
    // stops everyone, children included.
    blitz::cancellation_token all;
    blitz::cancellation_token group = all.child_token();
    auto a = blitz::spawn(worker(all));
    auto b = blitz::spawn(worker(group));
    co_await blitz::sleep(10ms);
    group.cancel();
    const int b_steps = co_await b;
    bad += a.is_finished();  // the parent's task runs on
    all.cancel();
    const int a_steps = co_await a;
    std::printf("tokens: the child's task stopped after %d steps, the parent's after %d\n", b_steps,
                a_steps);

    // abort(): the task is dropped at its next await; awaiting its handle throws task_cancelled.
    auto forever = blitz::spawn(worker(blitz::cancellation_token{}));
    co_await blitz::sleep(2ms);
    forever.abort();
    try {
        (void)co_await forever;
        bad += 1;
    } catch (const blitz::task_cancelled&) {
        std::puts("abort: the task was cancelled at its next await");
    }

    // scoped: its tasks borrow `done` from this frame; scoped returns only once all have ended.
    std::atomic<int> done{0};
    co_await blitz::scoped([&](blitz::task_scope& s) -> blitz::task<void> {
        for (int i = 0; i < 10; ++i) {
            s.spawn([](std::atomic<int>& d, int i) -> blitz::task<void> {
                co_await blitz::sleep(std::chrono::milliseconds(i));
                d.fetch_add(1);
            }(done, i));
        }
        co_return;
    });
    std::printf("scoped: %d of 10 tasks had finished when it returned\n", done.load());
    bad += done.load() != 10;

    // A timeout around a scope: when the time runs out, the scope's tasks are aborted and waited
    // for before the timeout returns, so nothing still touches `started` afterwards.
    std::atomic<int> started{0};
    auto r =
        co_await blitz::timeout(5ms, blitz::scoped([&](blitz::task_scope& s) -> blitz::task<void> {
                                    for (int i = 0; i < 4; ++i) {
                                        s.spawn([](std::atomic<int>& st) -> blitz::task<void> {
                                            st.fetch_add(1);
                                            co_await blitz::sleep(1h);
                                        }(started));
                                    }
                                    co_return;
                                }));
    std::printf("timeout around a scope: %s, its %d tasks aborted and gone\n",
                r.timed_out() ? "timed out" : "finished", started.load());
    bad += !r.timed_out();
    co_return bad;
}

int main() {
    blitz::runtime rt;
    const int bad = rt.block_on(run());
    std::puts(bad == 0 ? "cancellation: ok" : "cancellation: WRONG");
    return bad == 0 ? 0 : 1;
}
