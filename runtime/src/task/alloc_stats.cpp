// SPDX-License-Identifier: MIT
#include "task/alloc_stats.hpp"

#include "blitz/detail/mutex.hpp"

namespace blitz::detail::alloc_stats {
namespace {

struct registry {
    mutex mu;
    block* head BLITZ_GUARDED_BY(mu) = nullptr;
    totals retired BLITZ_GUARDED_BY(mu);  // counts of threads that have exited
};
registry& reg() {
    static registry* r = new registry();  // never destroyed: thread exits may come late
    return *r;
}

}  // namespace

block::block() {
    registry& r = reg();
    lock_guard l(r.mu);
    next = r.head;
    if (r.head) r.head->prev = this;
    r.head = this;
}

block::~block() {
    registry& r = reg();
    lock_guard l(r.mu);
    r.retired.allocs += allocs.load(std::memory_order_relaxed);
    r.retired.bytes += bytes.load(std::memory_order_relaxed);
    r.retired.frees += frees.load(std::memory_order_relaxed);
    if (prev)
        prev->next = next;
    else
        r.head = next;
    if (next) next->prev = prev;
}

totals read() {
    registry& r = reg();
    lock_guard l(r.mu);
    totals t = r.retired;
    for (block* b = r.head; b; b = b->next) {
        t.allocs += b->allocs.load(std::memory_order_relaxed);  // relaxed: statistics
        t.bytes += b->bytes.load(std::memory_order_relaxed);
        t.frees += b->frees.load(std::memory_order_relaxed);
    }
    return t;
}

}  // namespace blitz::detail::alloc_stats
