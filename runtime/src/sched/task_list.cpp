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

std::uint16_t task_list::reserve_ids(unsigned n) noexcept {
    for (;;) {
        // relaxed: only uniqueness matters
        const std::uint32_t first =
            next_list_id.fetch_add(n, std::memory_order_relaxed) % 65535 + 1;
        if (first + n - 1 <= 65535) return static_cast<std::uint16_t>(first);
        // The block would wrap past 65,535: take the next one.
    }
}

}  // namespace blitz::detail
