#pragma once
// join, select and race: run several tasks at once and combine their outcomes.

#include <array>
#include <cstddef>
#include <exception>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "blitz/join_handle.hpp"
#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace blitz {

namespace detail {

// void results become std::monostate inside tuples and variants.
template <class T>
using value_or_unit = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
task<value_or_unit<T>> as_value(join_handle<T>& h) {
    if constexpr (std::is_void_v<T>) {
        co_await h;
        co_return std::monostate{};
    } else {
        co_return co_await h;
    }
}

// The branches of a join or select, spawned on the current runtime. Aborts any still running
// when destroyed, so a combinator that is itself cancelled leaves no branch behind.
template <class... T>
struct branches {
    std::tuple<join_handle<T>...> hs;
    explicit branches(task<T>... ts) : hs(spawn(std::move(ts))...) {}
    branches(const branches&) = delete;
    ~branches() {
        std::apply([](auto&... h) { (abort_unfinished(h), ...); }, hs);
    }
    template <class H>
    static void abort_unfinished(H& h) noexcept {
        if (h.valid() && !h.is_finished()) h.abort();
    }
};

// Completes when any of the handles has finished (one waker registered on each).
template <class... T>
class any_finished {
public:
    explicit any_finished(std::tuple<join_handle<T>...>& hs) noexcept : hs_(hs) {}
    any_finished(const any_finished&) = delete;
    ~any_finished() { unregister(); }

    bool await_ready() const noexcept { return first() < sizeof...(T); }
    bool await_suspend(std::coroutine_handle<> c) {
        task_header* me = suspend_current(c, &ready, this);
        bool all = true;
        std::size_t i = 0;
        std::apply([&](auto&... h) {
            ((all = all && (registered_[i++] = h.register_join_waker(me->make_waker()))), ...);
        }, hs_);
        if (!all) {
            unregister();  // one finished meanwhile: continue at once
            return false;
        }
        return true;
    }
    // The index of the first finished handle (lowest index when several are).
    std::size_t await_resume() noexcept {
        unregister();
        return first();
    }

private:
    static bool ready(const void* a) noexcept {
        return static_cast<const any_finished*>(a)->first() < sizeof...(T);
    }
    std::size_t first() const noexcept {
        std::size_t i = 0, found = sizeof...(T);
        std::apply([&](auto&... h) { ((found = (found == sizeof...(T) && h.is_finished()) ? i : found, ++i), ...); }, hs_);
        return found;
    }
    void unregister() noexcept {
        std::size_t i = 0;
        std::apply([&](auto&... h) {
            ((registered_[i] ? (h.unregister_join_waker(), registered_[i] = false) : false, ++i), ...);
        }, hs_);
    }

    std::tuple<join_handle<T>...>& hs_;
    std::array<bool, sizeof...(T)> registered_{};
};

template <std::size_t I, class V, class... T>
task<V> take_winner(std::tuple<join_handle<T>...>& hs, std::size_t won) {
    if constexpr (I == sizeof...(T)) {
        throw std::logic_error("blitz::select: no branch finished");
    } else {
        if (won == I) co_return V(std::in_place_index<I>, co_await as_value(std::get<I>(hs)));
        co_return co_await take_winner<I + 1, V>(hs, won);
    }
}

// Awaits every handle from I on, keeping values and the first exception.
template <std::size_t I, class... T>
task<void> await_all(std::tuple<join_handle<T>...>& hs,
                     std::tuple<std::optional<value_or_unit<T>>...>& out, std::exception_ptr& err) {
    if constexpr (I < sizeof...(T)) {
        try {
            std::get<I>(out).emplace(co_await as_value(std::get<I>(hs)));
        } catch (...) {
            if (!err) err = std::current_exception();
        }
        co_await await_all<I + 1>(hs, out, err);
    }
}

// Awaits every handle from I on except `won`, discarding outcomes (they were aborted).
template <std::size_t I, class... T>
task<void> await_losers(std::tuple<join_handle<T>...>& hs, std::size_t won) {
    if constexpr (I < sizeof...(T)) {
        if (I != won) {
            try {
                (void)co_await as_value(std::get<I>(hs));
            } catch (...) {
            }
        }
        co_await await_losers<I + 1>(hs, won);
    }
}

}  // namespace detail

// Runs every task at once (each is spawned on the current runtime) and waits for all of them:
// `auto [a, b] = co_await join(f(), g());`. void results come back as std::monostate. If any
// branch throws, the first exception (in argument order) is rethrown once all have finished.
// Cancelling the joining task aborts the branches.
template <class... T>
task<std::tuple<detail::value_or_unit<T>...>> join(task<T>... ts) {
    detail::branches<T...> b(std::move(ts)...);
    std::tuple<std::optional<detail::value_or_unit<T>>...> out;
    std::exception_ptr first_error;
    co_await detail::await_all<0>(b.hs, out, first_error);
    if (first_error) std::rethrow_exception(first_error);
    co_return std::apply(
        [](auto&... o) { return std::tuple<detail::value_or_unit<T>...>(std::move(*o)...); }, out);
}

// Runs every task at once and completes with the first to finish: the result's index() says
// which branch won and std::get<I> gives its value (a branch that threw rethrows here). The
// other branches are aborted and waited for, so their destructors have run when select returns.
// When several finish together the earliest argument wins.
template <class... T>
task<std::variant<detail::value_or_unit<T>...>> select(task<T>... ts) {
    using V = std::variant<detail::value_or_unit<T>...>;
    detail::branches<T...> b(std::move(ts)...);
    std::size_t won = 0;
    {
        detail::any_finished<T...> any(b.hs);
        won = co_await any;
    }
    // Cancel the losers and wait until they are gone.
    std::size_t i = 0;
    std::apply([&](auto&... h) { ((i++ != won ? h.abort() : void()), ...); }, b.hs);
    co_await detail::await_losers<0>(b.hs, won);
    co_return co_await detail::take_winner<0, V>(b.hs, won);
}

// Like select over tasks of one type: the first to finish gives the value (or rethrows its
// exception); the rest are cancelled.
template <class T, class... U>
requires(std::is_same_v<T, U> && ...)
task<T> race(task<T> first, task<U>... rest) {
    auto v = co_await select(std::move(first), std::move(rest)...);
    if constexpr (std::is_void_v<T>) {
        co_return;
    } else {
        co_return std::visit([](auto& x) -> T { return std::move(x); }, v);
    }
}

}  // namespace blitz
