// SPDX-License-Identifier: MIT
#pragma once
// The branches a select can wait on, and the awaiter that drives them inside the awaiting task
// (the machinery behind blitz::select, race and timeout).

#include <array>
#include <coroutine>
#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "blitz/detail/select_scope.hpp"
#include "blitz/task.hpp"

namespace blitz::detail {

// void results become std::monostate inside tuples and variants.
template <class T>
using value_or_unit = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
struct is_blitz_task : std::false_type {};
template <class T>
struct is_blitz_task<task<T>> : std::true_type {};

template <class A>
concept member_co_await = requires(A&& a) { static_cast<A&&>(a).operator co_await(); };

// What a select keeps of an argument until it is awaited: a task by value (it owns a frame), any
// other awaitable by reference (it lives in the caller's full expression).
template <class A>
using stored_arg = std::conditional_t<is_blitz_task<std::remove_cvref_t<A>>::value,
                                      std::remove_cvref_t<A>, std::remove_reference_t<A>*>;
template <class A>
stored_arg<A> store_arg(A&& a) {
    if constexpr (is_blitz_task<std::remove_cvref_t<A>>::value) {
        static_assert(std::is_rvalue_reference_v<A&&>,
                      "blitz::select: pass tasks by value (std::move a named task)");
        return std::move(a);
    } else {
        return &a;
    }
}

// An object of type T built in place from a factory's prvalue (T may be neither copyable nor
// movable), and destroyable early.
template <class T>
class in_place_box {
public:
    template <class F>
    explicit in_place_box(F&& make) {
        ::new (static_cast<void*>(bytes_)) T(make());
        alive_ = true;
    }
    in_place_box(const in_place_box&) = delete;
    in_place_box& operator=(const in_place_box&) = delete;
    ~in_place_box() { reset(); }
    T& get() noexcept { return *std::launder(reinterpret_cast<T*>(bytes_)); }
    void reset() noexcept {
        if (alive_) get().~T();
        alive_ = false;
    }

private:
    alignas(T) unsigned char bytes_[sizeof(T)];
    bool alive_ = false;
};

// Calls a.await_suspend(c) and says whether the awaiting coroutine stays suspended.
template <class Aw>
bool suspend_branch(Aw& a, std::coroutine_handle<> c) {
    using R = decltype(a.await_suspend(c));
    if constexpr (std::is_void_v<R>) {
        a.await_suspend(c);
        return true;
    } else {
        static_assert(std::is_same_v<R, bool>,
                      "blitz::select: an awaitable whose await_suspend transfers to another "
                      "coroutine cannot be a branch; wrap it in a task");
        return a.await_suspend(c);
    }
}

// A task run inline as a branch: it starts inside the select's await_suspend and each of its
// suspensions is one of the select's; losing destroys its frame (and with it every awaiter it
// was suspended on, which gives back what it held).
template <class T>
class task_branch {
public:
    using raw_result = T;
    using result = value_or_unit<T>;
    static constexpr bool is_task_branch = true;
    explicit task_branch(task<T>& t) : h_(t.release()) {
        if (!h_) throw std::logic_error("blitz::select: a branch task is empty");
    }
    task_branch(const task_branch&) = delete;
    task_branch& operator=(const task_branch&) = delete;
    ~task_branch() { lose(); }

    // Runs the task until it first suspends; true if it finished meanwhile.
    bool start(std::coroutine_handle<> c) {
        h_.resume();  // no continuation yet: a finish returns here
        if (h_.done()) return true;
        h_.promise().set_continuation(c);
        return false;
    }
    result take() {
        if constexpr (std::is_void_v<T>) {
            h_.promise().take_result();
            return std::monostate{};
        } else {
            return h_.promise().take_result();
        }
    }
    void lose() noexcept {
        if (h_) std::exchange(h_, nullptr).destroy();
    }

private:
    std::coroutine_handle<promise<T>> h_;
};

// An awaitable (or the awaiter its operator co_await makes) as a branch.
template <class A>
class awaitable_branch {
    static_assert(::blitz::awaitable<A>,
                  "blitz::select: a branch can be only one of blitz's awaitables (a channel "
                  "operation, a lock, a timer, a socket operation, a join handle, another "
                  "select or timeout) or a blitz task. This one is another library's: the "
                  "select would hand it the task's coroutine and nothing would resume it "
                  "through its worker. Hand its result through a blitz primitive (a "
                  "blitz::oneshot its callback fills) and select on that, or, for an awaitable "
                  "of your own that suspends through blitz, declare "
                  "`using blitz_awaitable = void;` in it.");
    static constexpr bool owns = member_co_await<A>;
    template <class X>
    struct awaiter_of {
        using type = std::remove_reference_t<X>&;
    };
    template <class X>
        requires member_co_await<X>
    struct awaiter_of<X> {
        using type = decltype(std::declval<X>().operator co_await());
    };
    using awaiter = typename awaiter_of<A>::type;

public:
    using raw_result = decltype(std::declval<std::remove_reference_t<awaiter>&>().await_resume());
    using result = value_or_unit<raw_result>;
    static constexpr bool is_task_branch = false;

    explicit awaitable_branch(std::remove_reference_t<A>* a)
        : box_([a]() -> decltype(auto) {
              if constexpr (owns) {
                  return static_cast<A&&>(*a).operator co_await();
              } else {
                  return ref{*a};
              }
          }) {}

    bool try_ready() { return aw().await_ready(); }
    bool suspend(std::coroutine_handle<> c) { return suspend_branch(aw(), c); }
    result take() {
        if constexpr (std::is_void_v<raw_result>) {
            aw().await_resume();
            return std::monostate{};
        } else {
            return aw().await_resume();
        }
    }
    // An owned awaiter goes at once (withdrawing its registration, giving back a grant); a
    // borrowed one goes with the caller's full expression.
    void lose() noexcept {
        if constexpr (owns) box_.reset();
    }

private:
    struct ref {
        std::remove_reference_t<A>& r;
    };
    using held = std::conditional_t<owns, awaiter, ref>;
    std::remove_reference_t<awaiter>& aw() {
        if constexpr (owns) {
            return box_.get();
        } else {
            return box_.get().r;
        }
    }
    in_place_box<held> box_;
};

template <class A>
struct branch_type {
    using type = awaitable_branch<A>;
};
template <class A>
    requires is_blitz_task<std::remove_cvref_t<A>>::value
struct branch_type<A> {
    using type = task_branch<typename std::remove_cvref_t<A>::value_type>;
};
template <class A>
using branch_of = typename branch_type<A>::type;

// Drives the branches of one select inside the awaiting task (select_scope has the protocol).
// 1. await_ready: awaitable branches are checked in order up to the first task branch; the
//    first ready one wins and nothing after it is touched.
// 2. await_suspend: the rest, in order: a task branch runs until it suspends, an awaitable is
//    checked, then suspended on; the first to finish (or refuse to suspend) wins at once.
// 3. Polls pick the first ready branch (select_scope::ready); an inline task that finishes
//    resumes the awaiting coroutine through its continuation.
// 4. await_resume: every other branch is dropped (tasks destroyed, owned awaiters destroyed,
//    borrowed ones left to the caller's full expression), then the winner's result is taken.
//
// Invariants (X7): exactly one branch completes; a loser's acquired resource is given back by
// its awaiter's destructor, never completed afterwards.
// Thread-safety: the awaiting task only.
template <class... A>
class select_awaiter {
public:
    static constexpr std::size_t n = sizeof...(A);
    using value_type = std::variant<typename branch_of<A>::result...>;

    explicit select_awaiter(std::tuple<stored_arg<A>...>& args)
        : select_awaiter(args, std::index_sequence_for<A...>{}) {}
    select_awaiter(const select_awaiter&) = delete;
    select_awaiter& operator=(const select_awaiter&) = delete;
    ~select_awaiter() {
        scope_.leave();
        // Branches go while the scope (which their drop hooks point into) is still alive.
        for_each_until([](auto& b, unsigned) {
            b.lose();
            return false;
        });
    }

    bool await_ready() {
        bool done = false;
        for_each_until([&](auto& b, unsigned i) {
            if constexpr (std::remove_reference_t<decltype(b)>::is_task_branch) {
                return true;  // tasks start in await_suspend, in order
            } else {
                checked_ = i + 1;
                if (b.try_ready()) {
                    won_ = i;
                    done = true;
                    return true;
                }
                return false;
            }
        });
        return done;
    }

    bool await_suspend(std::coroutine_handle<> c) {
        scope_.enter();
        for_each_until([&](auto& b, unsigned i) {
            scope_.set_active(i);
            bool finished;
            if constexpr (std::remove_reference_t<decltype(b)>::is_task_branch) {
                finished = b.start(c);
            } else {
                finished = (i >= checked_ && b.try_ready()) || !b.suspend(c);
            }
            scope_.make_current();
            if (finished) won_ = i;
            return finished;
        });
        if (won_ != n) {
            // A task branch started before the winner may own a task_scope whose tasks borrow
            // from its frame: the select returns only once they are gone (step 6).
            if (!scope_.win_during_setup(won_, c)) {
                scope_.install();
                return true;
            }
            scope_.leave();
            return false;
        }
        scope_.install();
        return true;
    }

    value_type await_resume() {
        if (won_ == n) won_ = scope_.active();
        if (BLITZ_FAULT(fault_select_completes_losers())) [[unlikely]]
            complete_ready_losers();
        scope_.leave();
        for_each_until([&](auto& b, unsigned i) {
            if (i != won_) b.lose();
            return false;
        });
        return take<0>();
    }

    unsigned winner() const noexcept { return won_; }

private:
    template <std::size_t... I>
    select_awaiter(std::tuple<stored_arg<A>...>& args, std::index_sequence<I...>)
        : branches_(std::get<I>(args)...) {}

    // Calls f(branch, index) in order until it returns true.
    template <class F>
    void for_each_until(F&& f) {
        std::apply(
            [&](auto&... b) {
                unsigned i = 0;
                (void)((f(b, i++)) || ...);
            },
            branches_);
    }
    // X7's negative control only: every losing awaitable branch that is ready now is completed
    // and its result discarded (a value it received is lost), as a select that ran each branch
    // as its own task did.
    void complete_ready_losers() noexcept {
        for_each_until([&](auto& b, unsigned i) {
            if constexpr (!std::remove_reference_t<decltype(b)>::is_task_branch) {
                if (i == won_) return false;
                const scope_slot& sl = slots_[i];
                bool ready = false;
                if (sl.armed) {
                    ready = sl.h && sl.hook && sl.hook->ready_check(sl.hook);  // not nested
                } else if (i > won_ && i >= checked_) {
                    ready = b.try_ready();  // never looked at: the plain ready path
                }
                if (ready) {
                    try {
                        (void)b.take();
                    } catch (...) {
                    }
                }
            }
            return false;
        });
    }
    template <std::size_t I>
    value_type take() {
        if constexpr (I + 1 < n) {
            if (won_ != I) return take<I + 1>();
        }
        return value_type(std::in_place_index<I>, std::get<I>(branches_).take());
    }

    std::tuple<branch_of<A>...> branches_;
    std::array<scope_slot, n> slots_{};
    select_scope scope_{slots_.data(), static_cast<unsigned>(n)};
    unsigned won_ = n;
    unsigned checked_ = 0;
};

// A lone argument as its select would see it: its result (void as std::monostate), and as is.
template <class A>
using branch_result = typename branch_of<A>::result;
template <class A>
using branch_raw_result = typename branch_of<A>::raw_result;

}  // namespace blitz::detail
