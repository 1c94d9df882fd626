#pragma once
// Setters for the thread-local context (runtime-internal; readers are in blitz/detail/context.hpp).

namespace blitz::detail {
class task_header;
class worker;
void set_current_task(task_header* t) noexcept;
void set_current_worker(worker* w) noexcept;
}  // namespace blitz::detail
