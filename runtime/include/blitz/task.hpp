// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::task<T>: the lazy coroutine type every blitz task is written as.

#include <concepts>
#include <coroutine>
#include <exception>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "blitz/detail/task_header.hpp"

namespace blitz {

template <class T = void>
class task;

}  // namespace blitz

// Which awaitables are blitz's: those of a type in one of blitz's namespaces (or with a template
// argument from one), found by argument-dependent lookup of this probe. The fallback sits in a
// namespace of its own, so ordinary lookup from here never sees blitz's overloads.
namespace blitz_awaitable_probe {
std::false_type blitz_awaitable_namespace(...);
template <class T>
using in_blitz_namespace =
    decltype(blitz_awaitable_namespace(static_cast<std::remove_cvref_t<T>*>(nullptr)));
}  // namespace blitz_awaitable_probe
namespace blitz {
std::true_type blitz_awaitable_namespace(const volatile void*);
}  // namespace blitz
// The same function through each nested namespace (one entity: no ambiguity when a type's
// namespaces include two of them).
namespace blitz::detail {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::net {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::net::detail {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::net::ops {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::fs {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::process {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::process::detail {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::signal {
using ::blitz::blitz_awaitable_namespace;
}
namespace blitz::testing {
using ::blitz::blitz_awaitable_namespace;
}

namespace blitz {

// An awaitable a blitz task may await: one of blitz's, std::suspend_never (which never
// suspends), or one of the user's own that suspends through blitz's seam (a blitz awaitable's
// await_suspend, as blitz/coop.hpp shows) and says so with `using blitz_awaitable = void;`.
// Anything else would hand the task's coroutine to code that resumes it outside blitz (on its
// own thread, or never): a task that hangs, or runs on a thread blitz does not know.
template <class A>
concept awaitable = blitz_awaitable_probe::in_blitz_namespace<A>::value || requires {
    typename std::remove_cvref_t<A>::blitz_awaitable;
} || std::same_as<std::remove_cvref_t<A>, std::suspend_never>;

namespace detail {

// An awaitable that must be awaited in the expression that makes it: a select, a race or a
// timeout that borrows an awaitable (a temporary of that expression; one whose arguments are all
// tasks holds them by value and may be kept). It says so with a member
// `static constexpr bool blitz_awaited_in_place = true;` and a constructor template that rejects
// copies and moves with the reason (BLITZ_AWAIT_IN_PLACE_ONLY).
template <class A>
concept awaited_in_place = std::remove_cvref_t<A>::blitz_awaited_in_place;

template <class>
inline constexpr bool await_in_place_misuse = false;

template <class A>
concept has_member_co_await = requires(A&& a) { static_cast<A&&>(a).operator co_await(); };
// A non-member operator co_await found by argument-dependent lookup.
template <class A>
concept has_free_co_await = requires(A&& a) { operator co_await(static_cast<A&&>(a)); };

// The promise's pass-through for an awaiter awaited as it is (see await_transform): forwards the
// three calls to the operand, which lives until the end of the co_await's full-expression.
template <class A>
struct awaiter_ref {
    A&& a;
    bool await_ready() { return static_cast<bool>(a.await_ready()); }
    template <class H>
    decltype(auto) await_suspend(H h) {
        return a.await_suspend(h);
    }
    decltype(auto) await_resume() { return static_cast<A&&>(a).await_resume(); }
};

// Inside an awaited_in_place class S: the marker, and the constructor template that turns a
// copy or a move of S (what awaiting one kept in a variable needs) into an error that says why.
#define BLITZ_AWAIT_IN_PLACE_ONLY(S, borrows, what)                                           \
    static constexpr bool blitz_awaited_in_place = (borrows);                                 \
    template <class Other>                                                                    \
        requires(std::same_as<std::remove_cvref_t<Other>, S> && (borrows))                    \
    S(Other&&) {                                                                              \
        static_assert(::blitz::detail::await_in_place_misuse<Other>,                          \
                      "blitz: await a " what                                                  \
                      " in the expression that makes it, e.g. "                               \
                      "`co_await blitz::select(rx.recv(), blitz::sleep(1s))`. One kept in a " \
                      "variable borrows awaitables that were temporaries of the statement "   \
                      "that made it and are gone; keep those awaitables in variables of "     \
                      "their own, or build the " what " inside the co_await.");               \
    }

// Shared part of every task promise: the header pointer and the continuation.
class promise_base {
public:
    // `frame`: the address of the coroutine frame this promise is built in.
    explicit promise_base(const void* frame) noexcept
        : header_(claim_fresh_header(frame, elided_mark())) {}

    // Frame allocation (in promise<T>): [result slot | task_header | frame], so a spawned task
    // costs one allocation.
    std::suspend_always initial_suspend() noexcept { return {}; }

    struct final_awaiter {
        bool await_ready() const noexcept { return false; }
        template <class P>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
            // Inline await: transfer back to the awaiting coroutine. Spawned root: return to the
            // worker, which sees done() and completes the task.
            if (auto c = h.promise().continuation_) return c;
            return std::noop_coroutine();
        }
        void await_resume() const noexcept {}
    };
    final_awaiter final_suspend() noexcept { return {}; }

    // Every co_await in a task passes through here unchanged, except an awaited_in_place one:
    // taken by value, it must be the prvalue its maker returned (no copy or move happens), so
    // `co_await s` and `co_await std::move(s)` on a select kept in a variable do not compile
    // (its constructor template says why) instead of reading destroyed temporaries. Its awaiter
    // is made here and keeps nothing of the parameter.
    // Any other awaitable must be blitz's (blitz::awaitable): one from another library is a
    // compile error that says what to do instead. What goes back is what the compiler would
    // have made of the operand: the awaiter its operator co_await (a member, or a non-member
    // found by argument-dependent lookup) returns, or a forwarder to the operand itself (g++ 12
    // copies an awaitable that await_transform returns by reference, and most awaiters cannot be
    // copied).
    template <class A>
        requires(!awaited_in_place<A>)
    auto await_transform(A&& a) {
        static_assert(::blitz::awaitable<A>,
                      "blitz: a task can await only blitz's awaitables (its channels, locks, "
                      "timers, sockets, join handles, selects and other tasks). This one is "
                      "another library's: nothing would resume the task through its worker, so "
                      "it would hang or run on a thread blitz does not know. Hand its result to "
                      "the task through a blitz primitive (a blitz::oneshot its callback "
                      "fills), or, for an awaitable of your own that suspends through blitz "
                      "(blitz/coop.hpp), declare `using blitz_awaitable = void;` in it.");
        if constexpr (has_member_co_await<A>) {
            return static_cast<A&&>(a).operator co_await();
        } else if constexpr (has_free_co_await<A>) {
            return operator co_await(static_cast<A&&>(a));
        } else {
            return awaiter_ref<A>{static_cast<A&&>(a)};
        }
    }
    template <awaited_in_place A>
    auto await_transform(A a) {
        return std::move(a).operator co_await();
    }

    // The header in front of this frame, or nullptr when the compiler elided the allocation.
    task_header* header() const noexcept { return header_ == elided_mark() ? nullptr : header_; }
    // header() without the translation, for spawn: elided_mark() when elided, never null.
    task_header* header_or_mark() const noexcept { return header_; }
    // For the task dump: whether `frame` (this promise's frame) looks like a blitz task's, its
    // header word being the one a task promise writes (the header in front of it, or the mark
    // of an elided allocation). A coroutine of another library's type, which a task may await,
    // has other bytes there, so the walk stops at it instead of following its words.
    bool is_task_frame(const void* frame) const noexcept {
        return header_ == elided_mark() || header_ == header_of_frame(const_cast<void*>(frame));
    }
    void set_continuation(std::coroutine_handle<> c) noexcept { continuation_ = c; }
    // The coroutine awaiting this one inline (null: a spawned root). The task dump walks a
    // suspended task's chain up through these, reaching each promise from its frame's address
    // as coroutine_handle<promise_base> (every promise<T> has this class as its only base and
    // an alignment of at most 16, so both compilers place it right after the frame's two
    // function pointers, where promise_base's own alignment puts it too).
    std::coroutine_handle<> continuation() const noexcept { return continuation_; }

    // An address no header has (odd, below any mapping): the header word of an elided frame.
    static task_header* elided_mark() noexcept {
        return reinterpret_cast<task_header*>(std::uintptr_t{0xb1172e1d});
    }

private:
    task_header* header_;  // elided_mark() when the frame is not in a block of ours
    std::coroutine_handle<> continuation_{};
};

// Where a task's outcome is kept: outside the frame when the frame was allocated by us, so it
// outlives the frame (in the header for task<void>, in front of the header otherwise); inside the
// promise otherwise (a frame whose allocation the compiler elided is only ever awaited inline).
template <class T>
using result_slot = std::conditional_t<std::is_void_v<T>, std::exception_ptr,
                                       std::variant<std::monostate, T, std::exception_ptr>>;

// The table of a result slot kept in front of the header (every result type but void's, whose
// exception slot is in the header).
template <class Slot>
inline constexpr task_header::result_ops front_slot_ops{
    new_aligned(sizeof(Slot)), [](void* p) noexcept { static_cast<Slot*>(p)->~Slot(); },
    [](void* p) noexcept -> std::exception_ptr {
        auto* s = static_cast<Slot*>(p);
        return s->index() == 2 ? std::get<2>(*s) : std::exception_ptr();
    }};

// Builds the result slot in front of the header of a frame we allocated (nothing otherwise:
// the promise's own slot is used).
template <class Slot>
void place_result_slot(task_header* h) noexcept {
    static_assert(alignof(Slot) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                  "blitz::task<T>: over-aligned result types are not supported; wrap T");
    if (!h) return;
    new (h->result_slot()) Slot();
    h->mark_slot_built();
}

template <class Slot>
Slot* slot_of(task_header* h, Slot* own) noexcept {
    return h ? static_cast<Slot*>(h->result_slot()) : own;
}

template <class T>
T take_from(result_slot<T>& r) {
    if constexpr (std::is_void_v<T>) {
        if (r) std::rethrow_exception(r);
    } else {
        if (r.index() == 2) std::rethrow_exception(std::get<2>(r));
        return std::move(std::get<1>(r));
    }
}

template <class T>
class promise final : public promise_base {
public:
    static void* operator new(std::size_t n) {
        return allocate_task_frame(n, &front_slot_ops<result_slot<T>>);
    }
    static void operator delete(void* p) noexcept { free_task_frame(p); }

    promise() noexcept
        : promise_base(std::coroutine_handle<promise>::from_promise(*this).address()) {
        place_result_slot<result_slot<T>>(header());
    }

    task<T> get_return_object() noexcept;
    template <class U>
        requires std::is_convertible_v<U&&, T>
    void return_value(U&& v) {
        slot()->template emplace<1>(std::forward<U>(v));
    }
    void unhandled_exception() noexcept {
        if (!BLITZ_FAULT(detail::fault_drop_exceptions()))
            slot()->template emplace<2>(std::current_exception());
        if (header()) header()->mark_failed();
    }

    // Moves the result out, or rethrows the task's exception.
    T take_result() { return take_from<T>(*slot()); }

private:
    // In front of the header when the frame is ours, else own_ (no pointer kept: 8 bytes of
    // every frame).
    result_slot<T>* slot() noexcept { return slot_of(header(), &own_); }
    result_slot<T> own_;
};

template <>
class promise<void> final : public promise_base {
public:
    static void* operator new(std::size_t n) {
        return allocate_task_frame(n);  // the exception slot is in the header
    }
    static void operator delete(void* p) noexcept { free_task_frame(p); }

    promise() noexcept
        : promise_base(std::coroutine_handle<promise>::from_promise(*this).address()) {}

    task<void> get_return_object() noexcept;
    void return_void() noexcept {}
    void unhandled_exception() noexcept {
        if (!BLITZ_FAULT(detail::fault_drop_exceptions())) *slot() = std::current_exception();
        if (header()) header()->mark_failed();
    }
    void take_result() { take_from<void>(*slot()); }

private:
    result_slot<void>* slot() noexcept { return slot_of(header(), &own_); }
    result_slot<void> own_;
};

}  // namespace detail

// A lazily started coroutine producing a T (or an exception).
//
// 1. Calling a task function allocates its frame and suspends before the body runs.
// 2. `co_await t` from another task runs it inline: control passes to it by symmetric transfer
//    and returns to the awaiter when it finishes; its result or exception comes out of co_await.
// 3. `blitz::spawn(t)` (or runtime::spawn) hands it to the scheduler instead; see join_handle.
//
// Invariants: a task owns its frame until awaited to completion, spawned, or destroyed; a
// moved-from task is empty. A task may only suspend on blitz awaitables (which record where to
// resume); an awaitable from another library that suspends would leave the task idle forever.
// Thread-safety: a task object is a value; use it from one thread at a time.
template <class T>
class [[nodiscard]] task {
public:
    using promise_type = detail::promise<T>;
    using value_type = T;
    static_assert(!std::is_reference_v<T>, "task<T&> is not supported; return a pointer");

    task() noexcept = default;
    explicit task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
    task(task&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    task& operator=(task&& o) noexcept {
        if (this != &o) {
            if (h_) h_.destroy();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    ~task() {
        if (h_) h_.destroy();
    }

    bool valid() const noexcept { return static_cast<bool>(h_); }

    auto operator co_await() && noexcept {
        struct awaiter {
            std::coroutine_handle<promise_type> h;
            bool await_ready() const noexcept { return !h || h.done(); }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
                h.promise().set_continuation(caller);
                return h;
            }
            T await_resume() {
                if (!h) throw std::logic_error("blitz::task: awaited an empty task");
                return h.promise().take_result();
            }
        };
        return awaiter{h_};
    }
    auto operator co_await() & noexcept { return std::move(*this).operator co_await(); }

    // Releases ownership of the coroutine (used by spawn).
    std::coroutine_handle<promise_type> release() noexcept { return std::exchange(h_, nullptr); }

private:
    std::coroutine_handle<promise_type> h_{};
};

namespace detail {
template <class T>
task<T> promise<T>::get_return_object() noexcept {
    return task<T>{std::coroutine_handle<promise<T>>::from_promise(*this)};
}
inline task<void> promise<void>::get_return_object() noexcept {
    return task<void>{std::coroutine_handle<promise<void>>::from_promise(*this)};
}
}  // namespace detail

}  // namespace blitz
