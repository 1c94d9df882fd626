#pragma once
// task_registry: every live (not yet complete) task of one runtime, so shutdown can find tasks
// that sit in no queue.

#include <cstdint>
#include <memory>
#include <mutex>

#include "blitz/detail/task_header.hpp"
#include "sched/atomic.hpp"

namespace blitz::detail {

// Intrusive doubly-linked lists (task_header::reg_prev_/reg_next_), sharded by address so that
// spawns and completions on different workers rarely meet on one lock. The lock is taken once
// at spawn and once at completion, never on the poll/wake path.
//
// Invariants: a task is in exactly one shard from spawn until completion or cancellation.
// Thread-safety: every method from any thread.
class task_registry {
public:
    explicit task_registry(unsigned shards);
    void insert(task_header* t) noexcept;
    void remove(task_header* t) noexcept;
    // Removes and returns some task, or nullptr when empty (shutdown).
    task_header* pop_any() noexcept;
    std::uint64_t inserted() const noexcept;  // tasks ever inserted

private:
    struct alignas(cache_line) shard {
        std::mutex mu;
        task_header* head = nullptr;  // guarded by mu
        std::uint64_t inserted = 0;   // guarded by mu
    };
    shard& shard_for(const task_header* t) noexcept;

    std::unique_ptr<shard[]> shards_;
    unsigned mask_;
};

}  // namespace blitz::detail
