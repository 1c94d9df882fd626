// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// join, select and race: wait for several things at once and combine their outcomes.

#include <array>
#include <cstddef>
#include <exception>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "blitz/detail/select_branch.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace blitz {

namespace detail {

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

// The description of a select (or race) until it is awaited. Tasks are held by value; other
// awaitables by reference, so await it in the expression that made it:
// `co_await blitz::select(rx.recv(), blitz::sleep(1s))`.
template <bool Unwrap, class... A>
class [[nodiscard]] select_op {
public:
    explicit select_op(A&&... a) : args_(detail::store_arg<A>(static_cast<A&&>(a))...) {}
    select_op(const select_op&) = delete;
    select_op& operator=(const select_op&) = delete;
    BLITZ_AWAIT_IN_PLACE_ONLY(select_op,
                              (!detail::is_blitz_task<std::remove_cvref_t<A>>::value || ...),
                              "select (or race)")

    class awaiter : public detail::select_awaiter<A...> {
    public:
        using base = detail::select_awaiter<A...>;
        explicit awaiter(select_op& op) : base(op.args_) {}
        decltype(auto) await_resume() {
            if constexpr (Unwrap) {
                return std::visit([](auto&& x) { return std::move(x); }, base::await_resume());
            } else {
                return base::await_resume();
            }
        }
    };
    // Only an rvalue can be awaited (a select runs once).
    awaiter operator co_await() && { return awaiter(*this); }

private:
    std::tuple<detail::stored_arg<A>...> args_;
};

// Waits for the first of several awaitables to complete, inside the calling task, and gives its
// result: the variant's index() says which argument won, std::get<I> its value (void results
// are std::monostate; a branch that threw rethrows here).
//
//   auto r = co_await blitz::select(rx1.recv(), rx2.recv(), blitz::sleep(10ms));
//
// A branch is any blitz awaitable (a channel recv or send, a lock, a semaphore acquire, a
// notified(), a sleep, a join handle, a oneshot receiver, another select or timeout) or a task,
// which runs inline in the calling task (nothing is spawned; spawn it and pass the join handle
// to run it in parallel). Nothing is polled before the select is awaited.
//
// Cancel safety (X7): exactly one branch completes. The others are dropped before select returns:
// an inline task's frame is destroyed, an awaiter withdraws its registration and gives back
// anything it had been granted (a value granted to a losing recv goes back to its channel), so
// whatever a losing branch took stays where it was. When several are ready at once the earliest
// argument wins; branches that can only complete by being resumed (a yield) come after every
// branch that can say it is ready. A branch that never suspends (a busy loop) cannot be
// preempted: as in Tokio, await points are where a select can decide.
template <class... A>
    requires(sizeof...(A) > 0)
select_op<false, A...> select(A&&... a) {
    return select_op<false, A...>(static_cast<A&&>(a)...);
}

// Like select over branches with one result type: the first to finish gives its value (or
// rethrows its exception); the rest are dropped as in select.
template <class... A>
    requires(sizeof...(A) > 0 &&
             (std::is_same_v<detail::branch_result<A>,
                             detail::branch_result<std::tuple_element_t<0, std::tuple<A...>>>> &&
              ...))
select_op<true, A...> race(A&&... a) {
    return select_op<true, A...>(static_cast<A&&>(a)...);
}

}  // namespace blitz
