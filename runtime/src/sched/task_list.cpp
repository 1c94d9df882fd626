// SPDX-License-Identifier: MIT
#include "sched/task_list.hpp"

namespace blitz::detail {

void task_list::sweep() noexcept {
    task_header* t = head_;
    while (t) {
        task_header* next = t->reg_next_;
        if (t->is_complete()) {
            unlink(t);
            t->unref();  // the list's reference; may free the task
        }
        t = next;
    }
    kept_ = len_;
}

}  // namespace blitz::detail
