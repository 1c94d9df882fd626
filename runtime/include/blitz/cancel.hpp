// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::cancel_shield: defers cancellation of the current task while it is alive (K4).

#include <stdexcept>

#include "blitz/detail/context.hpp"
#include "blitz/detail/task_header.hpp"

namespace blitz {

// While a shield exists, abort() of the current task is recorded but not acted on; when the
// last shield goes, the task is cancelled at its next suspension. Shields nest up to 255 deep;
// a 256th throws std::length_error (in every build type) and leaves the task as it was.
// Outside a task it does nothing. Thread-safety: create and destroy on the task's own poll.
class cancel_shield {
public:
    cancel_shield() : t_(detail::current_task()) {
        if (t_ && !t_->shield_push()) {
            throw std::length_error("blitz::cancel_shield: nested more than 255 deep");
        }
    }
    ~cancel_shield() {
        if (t_) t_->shield_pop();
    }
    cancel_shield(const cancel_shield&) = delete;
    cancel_shield& operator=(const cancel_shield&) = delete;

private:
    detail::task_header* t_;
};

}  // namespace blitz
