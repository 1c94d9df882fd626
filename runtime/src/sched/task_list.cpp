#include "sched/task_list.hpp"

namespace blitz::detail {

void task_list::sweep() noexcept {
    task_header** link = &head_;
    while (task_header* t = *link) {
        if (t->is_complete()) {
            *link = t->reg_next_;
            t->reg_next_ = nullptr;
            --len_;
            t->unref();  // the list's reference; may free the task
        } else {
            link = &t->reg_next_;
        }
    }
    kept_ = len_;
}

}  // namespace blitz::detail
