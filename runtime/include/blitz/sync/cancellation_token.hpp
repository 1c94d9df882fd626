// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::cancellation_token: a cancel signal shared by tasks, with child tokens.

#include <atomic>
#include <coroutine>
#include <memory>
#include <mutex>
#include <vector>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/mutex.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/detail/wait_list.hpp"

namespace blitz {

namespace detail {
struct cancel_state {
    detail::atomic<bool> cancelled{false};
    detail::mutex mu;
    wait_queue waiters BLITZ_GUARDED_BY(mu);
    std::vector<std::weak_ptr<cancel_state>> children BLITZ_GUARDED_BY(mu);
};
}  // namespace detail

// Copies share one signal. cancel() is sticky and wakes every task awaiting cancelled(); child
// tokens are cancelled with their parent (not the other way round). Creating a token or a child
// allocates; waiting does not.
class cancellation_token {
public:
    cancellation_token() : s_(std::make_shared<detail::cancel_state>()) {}

    void cancel() const;
    bool is_cancelled() const noexcept { return s_->cancelled.load(std::memory_order_acquire); }
    cancellation_token child_token() const;

    class [[nodiscard]] awaiter : private ::blitz::detail::ready_hook {
    public:
        explicit awaiter(std::shared_ptr<detail::cancel_state> s) noexcept
            : s_(std::move(s)), node_(this) {}
        awaiter(const awaiter&) = delete;
        awaiter& operator=(const awaiter&) = delete;
        ~awaiter();
        bool await_ready() const noexcept { return s_->cancelled.load(std::memory_order_acquire); }
        bool await_suspend(std::coroutine_handle<> h);
        void await_resume() const noexcept {}

    private:
        static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
            out.kind = "cancellation";
            out.object = static_cast<const awaiter*>(p)->s_.get();
        }
        static bool ready(const ::blitz::detail::ready_hook* a) noexcept {
            return static_cast<const awaiter*>(a)->node_.done.load(std::memory_order_acquire);
        }
        std::shared_ptr<detail::cancel_state> s_;
        detail::wait_node node_;
    };
    // co_await token.cancelled(): completes once the token is cancelled.
    awaiter cancelled() const { return awaiter(s_); }

private:
    explicit cancellation_token(std::shared_ptr<detail::cancel_state> s) : s_(std::move(s)) {}
    std::shared_ptr<detail::cancel_state> s_;
};

}  // namespace blitz
