// SPDX-License-Identifier: MIT
#include "sched/task_list.hpp"

#include <algorithm>
#include <exception>

namespace blitz::detail {

namespace {
detail::atomic<std::uint32_t> next_list_id{0};
}  // namespace

task_list::task_list() noexcept
    // relaxed: only uniqueness matters; 1..65535, 0 means "in no list"
    : id_(static_cast<std::uint16_t>(next_list_id.fetch_add(1, std::memory_order_relaxed) % 65535 +
                                     1)) {}

bool task_list::resize(std::size_t cap) noexcept {
    void* p = std::realloc(items_, cap * sizeof(task_header*));
    if (!p) return false;
    items_ = static_cast<task_header**>(p);
    cap_ = cap;
    return true;
}

void task_list::grow() noexcept {
    if (!resize(cap_ ? 2 * cap_ : 64)) std::terminate();
}

void task_list::sweep() noexcept {
    std::size_t i = 0;
    while (i < len_) {
        task_header* t = items_[i];
        if (t->is_complete()) {
            take_out(i);  // the last one moves to i: look at i again
            t->unref();   // the list's reference; may free the task
        } else {
            ++i;
        }
    }
    kept_ = len_;
    // Under a quarter full after a burst: keep room for twice what is left.
    if (cap_ > 1024 && len_ < cap_ / 4) resize(std::max<std::size_t>(1024, 2 * len_));
}

}  // namespace blitz::detail
