// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::yield_now(): give the worker to other tasks once.

#include <coroutine>

#include "blitz/detail/context.hpp"

namespace blitz {

// `co_await blitz::yield_now()` suspends the calling task and puts it at the back of its
// worker's ring (never the LIFO slot), so every task queued there runs before it resumes.
struct yield_awaiter {
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
        detail::mark_yielded(detail::suspend_current(h));
    }
    void await_resume() const noexcept {}
};
inline yield_awaiter yield_now() noexcept { return {}; }

}  // namespace blitz
