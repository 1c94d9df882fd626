#include "sched/task_registry.hpp"

#include <bit>

namespace blitz::detail {

task_registry::task_registry(unsigned shards)
    : shards_(new shard[std::bit_ceil(shards)]), mask_(std::bit_ceil(shards) - 1) {}

task_registry::shard& task_registry::shard_for(const task_header* t) noexcept {
    auto a = reinterpret_cast<std::uintptr_t>(t);
    return shards_[((a >> 7) ^ (a >> 15)) & mask_];
}

void task_registry::insert(task_header* t) noexcept {
    shard& s = shard_for(t);
    std::lock_guard<std::mutex> l(s.mu);
    t->reg_prev_ = nullptr;
    t->reg_next_ = s.head;
    if (s.head) s.head->reg_prev_ = t;
    s.head = t;
    t->registered_ = true;
    ++s.inserted;
}

void task_registry::remove(task_header* t) noexcept {
    shard& s = shard_for(t);
    std::lock_guard<std::mutex> l(s.mu);
    if (t->reg_prev_) {
        t->reg_prev_->reg_next_ = t->reg_next_;
    } else {
        s.head = t->reg_next_;
    }
    if (t->reg_next_) t->reg_next_->reg_prev_ = t->reg_prev_;
    t->reg_prev_ = t->reg_next_ = nullptr;
    t->registered_ = false;
}

task_header* task_registry::pop_any() noexcept {
    for (unsigned i = 0; i <= mask_; ++i) {
        shard& s = shards_[i];
        std::lock_guard<std::mutex> l(s.mu);
        if (task_header* t = s.head) {
            s.head = t->reg_next_;
            if (s.head) s.head->reg_prev_ = nullptr;
            t->reg_prev_ = t->reg_next_ = nullptr;
            t->registered_ = false;
            return t;
        }
    }
    return nullptr;
}

std::uint64_t task_registry::inserted() const noexcept {
    std::uint64_t n = 0;
    for (unsigned i = 0; i <= mask_; ++i) {
        std::lock_guard<std::mutex> l(shards_[i].mu);
        n += shards_[i].inserted;
    }
    return n;
}

}  // namespace blitz::detail
