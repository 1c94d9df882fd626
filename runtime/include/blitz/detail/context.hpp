#pragma once
// Thread-local runtime context: which worker, scheduler and task the calling thread is running.

#include <coroutine>

namespace blitz::detail {

class scheduler;
class task_header;
class worker;

// The task whose poll is running on this thread, or nullptr.
task_header* current_task() noexcept;
// The worker this thread is, or nullptr on a plain thread.
worker* current_worker() noexcept;
// The scheduler of the current worker, or nullptr on a plain thread.
scheduler* current_scheduler() noexcept;

// For awaitables that park the running task: records `h` as the coroutine to resume on the
// next poll and returns the running task. Throws std::logic_error outside a runtime task.
task_header* suspend_current(std::coroutine_handle<> h);

}  // namespace blitz::detail
