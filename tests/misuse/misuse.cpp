// SPDX-License-Identifier: MIT
// Misuse that must not compile (issue 47, item 9), one case per MISUSE_* macro; with none
// defined, the correct forms around them, which must compile. scripts/check_misuse.sh compiles
// each case and looks for blitz's message.

#include <blitz/blitz.hpp>
#include <chrono>
#include <coroutine>
#include <utility>

using namespace std::chrono_literals;

// The correct forms: a select and a timeout awaited where they are made, awaitables of one's
// own that suspend through blitz and say so, std::suspend_never, and a select or timeout of
// tasks only (held by value), which may be kept in a variable.
struct own_awaitable : std::suspend_never {
    using blitz_awaitable = void;
};

blitz::task<int> child() { co_return 1; }

blitz::task<int> correct(blitz::receiver<int>& rx) {
    auto r = co_await blitz::select(rx.recv(), blitz::sleep(1ms));
    auto t = co_await blitz::timeout(1ms, rx.recv());
    co_await own_awaitable{};
    co_await std::suspend_never{};
    auto kept = blitz::select(child(), child());
    auto k = co_await std::move(kept);
    auto later = blitz::timeout(1ms, child());
    auto l = co_await std::move(later);
    co_return static_cast<int>(r.index() + k.index()) + (t.timed_out() ? 1 : 0) +
        (l.timed_out() ? 1 : 0);
}

#ifdef MISUSE_SELECT_MOVED
blitz::task<int> misuse(blitz::receiver<int>& rx) {
    auto s = blitz::select(rx.recv(), blitz::sleep(1ms));  // rx.recv() is gone at the ';'
    auto r = co_await std::move(s);
    co_return static_cast<int>(r.index());
}
#endif

#ifdef MISUSE_SELECT_LVALUE
blitz::task<int> misuse(blitz::receiver<int>& rx) {
    auto s = blitz::select(rx.recv(), blitz::sleep(1ms));
    auto r = co_await s;
    co_return static_cast<int>(r.index());
}
#endif

#ifdef MISUSE_RACE_MOVED
blitz::task<int> misuse(blitz::receiver<int>& a, blitz::receiver<int>& b) {
    auto s = blitz::race(a.recv(), b.recv());
    auto r = co_await std::move(s);
    co_return r ? *r : 0;
}
#endif

#ifdef MISUSE_TIMEOUT_MOVED
blitz::task<int> misuse(blitz::receiver<int>& rx) {
    auto t = blitz::timeout(1ms, rx.recv());
    auto r = co_await std::move(t);
    co_return r.timed_out() ? 1 : 0;
}
#endif

#ifdef MISUSE_FOREIGN_AWAITABLE
blitz::task<int> misuse() {
    co_await std::suspend_always{};  // nothing would ever resume the task
    co_return 0;
}
#endif

#ifdef MISUSE_FOREIGN_USER_AWAITABLE
struct resumes_on_its_own_thread {  // as another library's awaitable would
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const { (void)h; }
    void await_resume() const noexcept {}
};
blitz::task<int> misuse() {
    co_await resumes_on_its_own_thread{};
    co_return 0;
}
#endif

#ifdef MISUSE_FOREIGN_SELECT_BRANCH
struct resumes_on_its_own_thread {  // another library's awaitable, as a select branch
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const { (void)h; }
    void await_resume() const noexcept {}
};
blitz::task<int> misuse() {
    auto r = co_await blitz::select(resumes_on_its_own_thread{}, blitz::sleep(1ms));
    co_return static_cast<int>(r.index());
}
#endif

int main() { return 0; }
