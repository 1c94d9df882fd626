// SPDX-License-Identifier: MIT
#include "task/alloc_stats.hpp"

#include "blitz/detail/mutex.hpp"

namespace blitz::detail::alloc_stats {
namespace {

struct registry {
    mutex mu;
    counters* head BLITZ_GUARDED_BY(mu) = nullptr;
    totals retired BLITZ_GUARDED_BY(mu);  // counts of threads that have exited
};
registry& reg() {
    static registry* r = new registry();  // never destroyed: thread exits may come late
    return *r;
}

}  // namespace

void enlist(counters& c) {
    registry& r = reg();
    lock_guard l(r.mu);
    c.next = r.head;
    c.prev = nullptr;
    if (r.head) r.head->prev = &c;
    r.head = &c;
}

void retire(counters& c) {
    registry& r = reg();
    lock_guard l(r.mu);
    r.retired.allocs += c.allocs.load(std::memory_order_relaxed);
    r.retired.bytes += c.bytes.load(std::memory_order_relaxed);
    r.retired.frees += c.frees.load(std::memory_order_relaxed);
    if (c.prev)
        c.prev->next = c.next;
    else
        r.head = c.next;
    if (c.next) c.next->prev = c.prev;
    c.next = c.prev = nullptr;
}

totals read() {
    registry& r = reg();
    lock_guard l(r.mu);
    totals t = r.retired;
    for (counters* b = r.head; b; b = b->next) {
        t.allocs += b->allocs.load(std::memory_order_relaxed);  // relaxed: statistics
        t.bytes += b->bytes.load(std::memory_order_relaxed);
        t.frees += b->frees.load(std::memory_order_relaxed);
    }
    return t;
}

}  // namespace blitz::detail::alloc_stats
