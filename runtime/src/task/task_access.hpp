// SPDX-License-Identifier: MIT
#pragma once
// task_access: the task header's private fields, for the unit tests and the conformance suite,
// which build inert headers (no frame, no scheduler) to drive queues and state machines
// directly. Library code uses the header's own interface or is a named friend.

#include "blitz/detail/task_header.hpp"

namespace blitz::detail {

struct task_access {
    static auto& state(task_header& t) noexcept { return t.state_; }
    static auto& queue_next(task_header& t) noexcept { return t.queue_next_; }
    static auto& reg_owner(task_header& t) noexcept { return t.reg_owner_; }
    // A field no queue touches (the task-list position), for tests that tag inert headers.
    static auto& tag(task_header& t) noexcept { return t.reg_index_; }
    static std::uint32_t tag(const task_header& t) noexcept { return t.reg_index_; }
};

}  // namespace blitz::detail
