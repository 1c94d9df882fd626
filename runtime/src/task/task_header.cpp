// SPDX-License-Identifier: MIT
#include "blitz/detail/task_header.hpp"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <new>
#include <stdexcept>
#include <utility>

#include "blitz/detail/atomic.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/detail/spawn.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/testing/fault_injection.hpp"
#include "task/alloc_stats.hpp"
#include "task/block_cache.hpp"
#include "task/block_cache_info.hpp"
#include "task/context_internal.hpp"
#include "task/home_stack.hpp"
#include "task/schedule.hpp"
#include "task/site_table.hpp"

namespace blitz::detail {

// The layout the 160-byte block of an empty task depends on (fields listed in task_header.hpp);
// a field added there must find its bytes elsewhere. It was 80 bytes until issue 46 gave every
// task an id and a spawn site (16 bytes, as Tokio's task keeps an 8-byte id), then a poll count
// and a listing time for the dump (8 more; the prefix rounds 104 up to 112); the model
// checker's atomics are bigger.
#if !defined(BLITZ_MODEL_ATOMIC_HEADER)
static_assert(sizeof(void*) != 8 || sizeof(task_header) == (BLITZ_INSPECT ? 96 : 80),
              "task_header grew past 96 bytes (80 with inspection compiled out)");
#endif

namespace {

using namespace state;

// ---- the task waker ----
void waker_wake(void* p) noexcept {
    auto* t = static_cast<task_header*>(p);
    if (t->transition_to_scheduled(/*consume=*/true))
        t->scheduler()->schedule(t, /*is_yield=*/false);
}
void waker_wake_by_ref(void* p) noexcept {
    auto* t = static_cast<task_header*>(p);
    if (t->transition_to_scheduled(/*consume=*/false)) t->scheduler()->schedule(t, false);
}
void* waker_clone(void* p) noexcept {
    static_cast<task_header*>(p)->ref();
    return p;
}
void waker_drop(void* p) noexcept { static_cast<task_header*>(p)->unref(); }

constexpr waker_vtable task_waker_vtable{waker_wake, waker_wake_by_ref, waker_clone, waker_drop};

}  // namespace

// ---- allocation: [task_header | frame] in one block ----

// Freed task blocks (and the oneshot channels' states, cached_alloc) are kept per thread, by
// size class, and reused by the next spawn on that thread: fork-join work frees on one worker what
// another allocated, which sends glibc's free to its arena locks. Blocks are allocated at their
// class size so any block of a class fits any request of it; classes are 16 bytes apart (the heap's
// own granularity) and count the two bytes of the home stamp at the block's end (below), so a
// block is never more than 17 bytes larger than asked (64-byte classes made a 200-byte task take
// 256). A thread keeps at most 256 blocks of a class and 2 MiB in all (its base), and its cache
// is returned to the heap when the thread exits. What a thread has no room for goes back to the
// thread that allocated it (its home), not to glibc's free from here. Keep a worker's small: a
// cache that holds thousands of blocks, or a depot that trades them between threads, hands
// skynet's tasks scattered blocks instead of the ones malloc carves in spawn order, and skynet_1m
// ran 1.18x slower with one (results/epyc-2c-kvm/block-depot).
//
// A thread that is not a worker (nor draining a runtime) may keep more, from one budget of
// 16 MiB that all such threads share: a plain thread that spawns into a runtime holds the join
// handles and drops a burst of them at once (each drop frees a block there), and its next burst
// allocates as many; with the base alone, all but 256 of each burst went through malloc and free
// (spawn_many_remote_idle: 0.975 heap allocations a spawn; results/epyc-2c-kvm/plain-thread-cache).
// Blocks beyond the base are charged to the budget as they come in and refunded as they go out.
// Off under AddressSanitizer, so that a use after free still faults.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool block_cache_on = false;
#else
constexpr bool block_cache_on = true;
#endif
// Homes are off in the model checker's build, which compiles this file with its own atomics: a
// home claimed in one execution would be modelled there and plain in the next.
#if defined(BLITZ_MODEL_ATOMIC_HEADER)
constexpr bool homes_on = false;
#else
constexpr bool homes_on = true;
#endif

namespace {
// Bytes cached beyond their threads' bases, by every thread (block_cache::wide_budget bounds it).
// relaxed: a count that bounds memory; no block is published through it.
detail::atomic<std::size_t> wide_charged{0};

// Whether the calling thread may cache beyond its base: not a worker, not draining a runtime.
bool wide_thread() noexcept {
    return current_runtime() == nullptr && draining_runtime() == nullptr;
}
}  // namespace

// ---- blocks on their way home (task/home_stack.hpp) ----
//
// Each thread that caches blocks owns a home: a slot of `homes` whose index (1 ... home_slots-1;
// 0: none) it stamps in the last two bytes of every block it hands out (block classes count
// those two bytes, so the frame never reaches them). A thread whose cache has no room for a
// block stamped with another home batches it for that home and pushes the batch whole; the home's
// owner takes its stack when its cache runs dry and when it goes idle. The owner frees what it
// has no room for into its own arena, so no thread frees into an arena another allocates from.

// A returned block's first bytes while it travels (every class holds at least 16 bytes).
struct returned_block {
    detail::atomic<returned_block*> next{nullptr};
    std::uint8_t size_class = 0;
};
struct returned_link {
    static detail::atomic<returned_block*>& of(returned_block* b) noexcept { return b->next; }
};
using block_home_stack = home_stack<returned_block, returned_link>;

constexpr std::size_t home_slots = 1024;
using home_id = std::uint16_t;
static_assert(home_slots - 1 <= UINT16_MAX, "a home's index must fit its stamp");

block_home_stack homes[home_slots];                // index 0 is never claimed
detail::atomic<bool> home_owned[home_slots] = {};  // claimed by a live thread
detail::atomic<std::size_t> home_hint{1};          // where the next claim starts looking

// What the homes did (block_cache_info; relaxed: counts read by tests once threads joined).
detail::atomic<std::uint64_t> homes_sent{0};     // blocks pushed to a home
detail::atomic<std::uint64_t> homes_taken{0};    // blocks an owner took back
detail::atomic<std::uint64_t> homes_refused{0};  // blocks whose home had closed (to the heap)

// A slot no live thread owns, now owned by the caller (its stack reopened); 0 if all are taken.
home_id claim_home() noexcept {
    const std::size_t start = home_hint.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < home_slots - 1; ++i) {
        const std::size_t h = 1 + (start - 1 + i) % (home_slots - 1);
        bool expected = false;
        if (home_owned[h].load(std::memory_order_relaxed)) continue;
        // acquire: pairs with the previous owner's release, after its close
        if (home_owned[h].compare_exchange_strong(expected, true, std::memory_order_acquire,
                                                  std::memory_order_relaxed)) {
            homes[h].reopen();
            home_hint.store(h % (home_slots - 1) + 1, std::memory_order_relaxed);
            return static_cast<home_id>(h);
        }
    }
    return 0;
}

// Frees a chain of returned blocks to the heap; how many.
std::uint64_t free_chain(returned_block* b) noexcept {
    std::uint64_t n = 0;
    for (; b; ++n) {
        returned_block* next = block_home_stack::next(b);
        b->~returned_block();
        ::operator delete(b);
        b = next;
    }
    return n;
}

class block_cache {
public:
    static constexpr std::size_t step = 16, classes = 64, per_class = 256;
    static constexpr std::size_t max_bytes = std::size_t{2} << 20;
    static constexpr std::size_t wide_budget = std::size_t{16} << 20;
    static constexpr unsigned batch = 32;  // blocks for one home pushed together
    static constexpr home_id unclaimed = UINT16_MAX;

    // No destructor: the cache is a thread_local the spawn path reads with no first-use guard
    // (constinit, trivially destructible). enroll() arms the thread's block_cache_closer, whose
    // destructor calls close() when the thread exits.
    constexpr block_cache() = default;
    block_cache(const block_cache&) = delete;
    block_cache& operator=(const block_cache&) = delete;

    // The first use on this thread (a slow path): arms close() for the thread's exit and enlists
    // the allocation counters. Once only; nothing after close().
    void enroll() noexcept;
    // The thread exits: batched blocks go home, the home closes, the cached blocks go back to
    // the heap. A block freed on this thread later (static destructors) goes to the heap too.
    void close() noexcept {
        flush_outgoing();
        alive_ = false;
        if (home_ != 0 && home_ != unclaimed) {
            homes_taken.fetch_add(free_chain(homes[home_].close()), std::memory_order_relaxed);
            home_owned[home_].store(false, std::memory_order_release);
        }
        home_ = 0;
        for (auto& h : head_) {
            while (node* n = h) {
                h = n->next;
                ::operator delete(n);
            }
        }
        for (auto& n : count_) n = 0;
        bytes_ = 0;
        if (charged_) wide_charged.fetch_sub(charged_, std::memory_order_relaxed);
        charged_ = 0;
#if !defined(BLITZ_MODEL_ATOMIC_HEADER)
        if (enrolled_) alloc_stats::retire(stats_);
#endif
        refresh();
    }

    // ---- the fast paths: only while ready() ----
    // Ready: enrolled, alive, its home claimed (or none to be had) and nothing charged to the
    // shared budget, so a take needs no refund, a give no charge and a stamp no claim.
    bool ready() const noexcept { return ready_; }
    // A cached block of class c, or nullptr.
    void* pop(std::size_t c) noexcept {
        node* n = head_[c];
        if (!n) return nullptr;
        head_[c] = n->next;
        --count_[c];
        bytes_ -= bytes_of(c);
        return n;
    }
    // Whether the base has room for a block of class c.
    bool has_room(std::size_t c) const noexcept {
        return count_[c] < per_class && bytes_ + bytes_of(c) <= max_bytes;
    }
    // Keeps p, a block of class c, which must have room (or be charged to the shared budget).
    void push_unchecked(std::size_t c, void* p) noexcept {
        head_[c] = ::new (p) node{head_[c]};
        ++count_[c];
        bytes_ += bytes_of(c);
    }
    // Keeps p (a block of class c) if the base has room.
    bool push(std::size_t c, void* p) noexcept {
        if (!has_room(c)) return false;
        push_unchecked(c, p);
        return true;
    }
    // The home a block handed out is stamped with (ready(): claimed, or 0).
    home_id claimed_home() const noexcept { return home_; }
    // This thread's allocation counters (the model checker's build: the plain thread_local's).
#if defined(BLITZ_MODEL_ATOMIC_HEADER)
    alloc_stats::counters& stats() noexcept { return alloc_stats::mine(); }
#else
    alloc_stats::counters& stats() noexcept { return stats_; }
#endif
    bool alive() const noexcept { return alive_; }

    // ---- the slow paths ----
    // The class of a block for `bytes` (classes when too big to cache): the home's stamp counts.
    static std::size_t class_of(std::size_t bytes) noexcept {
        const std::size_t c = (bytes + sizeof(home_id) + step - 1) / step - 1;
        return c < classes ? c : classes;
    }
    static std::size_t bytes_of(std::size_t c) noexcept { return (c + 1) * step; }
    static home_id* stamp_of(void* block, std::size_t c) noexcept {
        return reinterpret_cast<home_id*>(static_cast<std::byte*>(block) + bytes_of(c) -
                                          sizeof(home_id));
    }
    // pop(), refunding what the thread holds beyond its base first.
    void* take(std::size_t c) noexcept {
        void* n = pop(c);
        if (n && charged_ != 0) {
            const std::size_t refund = std::min(charged_, bytes_of(c));
            charged_ -= refund;
            wide_charged.fetch_sub(refund, std::memory_order_relaxed);
            refresh();
        }
        return n;
    }
    // The caller's home, claimed at its first use (by an enrolled thread: its exit frees it).
    home_id home() noexcept {
        if (home_ == unclaimed) [[unlikely]] {
            enroll();
            home_ = homes_on && alive_ ? claim_home() : 0;
            refresh();
        }
        return home_;
    }
    // Keeps p (a block of class c) if the base has room, or else if this thread is not a worker
    // and the shared budget has room.
    bool give(std::size_t c, void* p) noexcept {
        if (!alive_) return false;
        if (push(c, p)) return true;
        const std::size_t b = bytes_of(c);
        if (!wide_thread() || !charge(b)) return false;
        charged_ += b;
        push_unchecked(c, p);
        refresh();
        return true;
    }
    // A block this thread has no room for: batched for its home if another live thread's.
    bool send_home(std::size_t c, void* p) noexcept {
        if (!alive_) return false;
        const home_id h = *stamp_of(p, c);
        if (h == 0 || h == home_) return false;  // nobody's, or ours: our own arena takes it
        if (h != out_home_) flush_outgoing();
        auto* b = ::new (p) returned_block{};
        b->size_class = static_cast<std::uint8_t>(c);
        if (out_first_ == nullptr) {
            out_home_ = h;
            out_last_ = b;
        } else {
            returned_link::of(b).store(out_first_, std::memory_order_relaxed);
        }
        out_first_ = b;
        if (++out_n_ == batch) flush_outgoing();
        return true;
    }
    // Pushes the pending batch to its home, or frees it if the home has closed.
    void flush_outgoing() noexcept {
        if (out_first_ == nullptr) return;
        const std::uint64_t n = out_n_;
        if (homes[out_home_].push_chain(out_first_, out_last_)) {
            homes_sent.fetch_add(n, std::memory_order_relaxed);
        } else {
            homes_refused.fetch_add(n, std::memory_order_relaxed);
            // The failed push may have linked the batch's last block to the stack's old head.
            returned_link::of(out_last_).store(nullptr, std::memory_order_relaxed);
            free_chain(out_first_);
        }
        out_first_ = out_last_ = nullptr;
        out_n_ = 0;
        out_home_ = 0;
    }
    // Takes back what other threads returned: each block into the cache, or to the heap if the
    // cache has no room. True if anything came back.
    bool take_home() noexcept {
        if (!alive_ || home_ == 0 || home_ == unclaimed) return false;
        returned_block* b = homes[home_].take_all();
        if (!b) return false;
        std::uint64_t n = 0;
        while (b) {
            returned_block* next = block_home_stack::next(b);
            const std::size_t c = b->size_class;
            b->~returned_block();
            if (!give(c, b)) ::operator delete(b);
            b = next;
            ++n;
        }
        homes_taken.fetch_add(n, std::memory_order_relaxed);
        return true;
    }
    std::size_t held(std::size_t c) const noexcept { return count_[c]; }

private:
    struct node {
        node* next;
    };
    // A compare-exchange, not an add undone when over: the count never passes the budget.
    static bool charge(std::size_t b) noexcept {
        std::size_t now = wide_charged.load(std::memory_order_relaxed);
        do {
            if (now + b > wide_budget) return false;
        } while (!wide_charged.compare_exchange_weak(now, now + b, std::memory_order_relaxed));
        return true;
    }
    void refresh() noexcept { ready_ = enrolled_ && alive_ && home_ != unclaimed && charged_ == 0; }
    node* head_[classes] = {};
    std::size_t count_[classes] = {};
    std::size_t bytes_ = 0;    // in all classes
    std::size_t charged_ = 0;  // of bytes_, charged to wide_charged (at most bytes_)
    bool ready_ = false;       // refresh() after any of the four below changes
    bool enrolled_ = false;
    bool alive_ = true;
    home_id home_ = unclaimed;
#if !defined(BLITZ_MODEL_ATOMIC_HEADER)
    alloc_stats::counters stats_;
#endif
    // The batch for one other thread's home, newest first (linked through returned_link).
    home_id out_home_ = 0;
    unsigned out_n_ = 0;
    returned_block* out_first_ = nullptr;
    returned_block* out_last_ = nullptr;
};

// The model checker's atomics are not constant-initialized: there the cache has a first-use guard.
#if !defined(BLITZ_MODEL_ATOMIC_HEADER)
constinit
#endif
    thread_local block_cache tl_blocks;

namespace {
// Closes the thread's cache when the thread exits (armed by block_cache::enroll).
struct block_cache_closer {
    bool armed = false;
    ~block_cache_closer() {
        if (armed) tl_blocks.close();
    }
};
thread_local block_cache_closer tl_block_closer;
}  // namespace

void block_cache::enroll() noexcept {
    if (enrolled_ || !alive_) return;
    enrolled_ = true;
    tl_block_closer.armed = true;
#if !defined(BLITZ_MODEL_ATOMIC_HEADER)
    alloc_stats::enlist(stats_);
#endif
    refresh();
}

namespace {
// The counters a slow path counts in: the cache's (enrolled now, unless it closed), or a plain
// thread_local's once it closed.
alloc_stats::counters& slow_counters() noexcept {
    tl_blocks.enroll();
    return tl_blocks.alive() ? tl_blocks.stats() : alloc_stats::mine();
}

// alloc_of_class when the cache is not ready or has no block of the class: enrolls the thread,
// takes back what other threads returned, else the heap.
[[gnu::noinline]] void* alloc_slow(std::size_t bytes, std::size_t c) {
    if (!block_cache_on || c >= block_cache::classes) return ::operator new(bytes);
    tl_blocks.enroll();
    void* block = tl_blocks.take(c);
    if (!block && tl_blocks.take_home()) block = tl_blocks.take(c);
    if (!block) block = ::operator new(block_cache::bytes_of(c));
    *block_cache::stamp_of(block, c) = tl_blocks.home();
    return block;
}

// The common allocation: a block of class c from the ready cache, stamped with its home; nullptr
// when alloc_slow must run.
[[gnu::always_inline]] inline void* alloc_fast(std::size_t c) noexcept {
    if (!block_cache_on || c >= block_cache::classes || !tl_blocks.ready()) return nullptr;
    void* block = tl_blocks.pop(c);
    if (block) *block_cache::stamp_of(block, c) = tl_blocks.claimed_home();
    return block;
}

// cached_alloc for a block of class c (block_cache::class_of(bytes)).
[[gnu::always_inline]] inline void* alloc_of_class(std::size_t bytes, std::size_t c) {
    if (void* block = alloc_fast(c)) [[likely]]
        return block;
    return alloc_slow(bytes, c);
}
}  // namespace

void* cached_alloc(std::size_t bytes) {
    return alloc_of_class(bytes, block_cache::class_of(bytes));
}

namespace {
// free_of_class when the cache is not ready or full: enrolls the thread, then the cache beyond
// its base, the block's home, or the heap; then counts the free if asked to.
[[gnu::noinline]] void free_slow(void* p, std::size_t c, bool counted) noexcept {
    bool kept = false;
    if (block_cache_on && c < block_cache::classes) {
        tl_blocks.enroll();
        kept = tl_blocks.give(c, p) || tl_blocks.send_home(c, p);
    }
    if (!kept) ::operator delete(p);
    if (counted) alloc_stats::on_free(slow_counters());
}
// Gives back a block of class c (block_cache::classes: one the heap allocated), counting it as
// a task's free when `counted`. The slow path is called last, so the common one saves no
// registers.
[[gnu::always_inline]] inline void free_of_class(void* p, std::size_t c,
                                                 bool counted = false) noexcept {
    if (block_cache_on && c < block_cache::classes && tl_blocks.ready() && tl_blocks.push(c, p))
        [[likely]] {
        if (counted) alloc_stats::on_free(tl_blocks.stats());
        return;
    }
    free_slow(p, c, counted);
}
}  // namespace

void cached_free(void* p, std::size_t bytes) noexcept {
    free_of_class(p, block_cache::class_of(bytes));
}

void block_cache_idle() noexcept {
    if (!block_cache_on) return;
    tl_blocks.flush_outgoing();
    (void)tl_blocks.take_home();
}

namespace block_cache_info {
bool enabled() noexcept { return block_cache_on; }
std::size_t held(std::size_t bytes) noexcept {
    const std::size_t c = block_cache::class_of(bytes);
    return c < block_cache::classes ? tl_blocks.held(c) : 0;
}
std::size_t block_size(std::size_t bytes) noexcept {
    const std::size_t c = block_cache::class_of(bytes);
    return c < block_cache::classes ? block_cache::bytes_of(c) : bytes;
}
std::size_t base_per_class() noexcept { return block_cache::per_class; }
std::size_t wide_budget() noexcept { return block_cache::wide_budget; }
std::size_t wide_charged() noexcept { return detail::wide_charged.load(std::memory_order_relaxed); }
home_counts homes() noexcept {
    return {homes_sent.load(std::memory_order_relaxed), homes_taken.load(std::memory_order_relaxed),
            homes_refused.load(std::memory_order_relaxed)};
}
std::uint16_t home_of(void* block, std::size_t bytes) noexcept {
    const std::size_t c = block_cache::class_of(bytes);
    return c < block_cache::classes ? *block_cache::stamp_of(block, c) : 0;
}
std::uint16_t my_home() noexcept { return tl_blocks.home(); }
}  // namespace block_cache_info

void* allocate_task_frame(std::size_t frame_size, const task_header::result_ops* front) {
    if (BLITZ_INJECTED_FAILURE(task_alloc)) throw std::bad_alloc();  // faults build only
    // The header in front of the frame (after the result slot, if any); the frame's address.
    // (Lambdas here share the function's access to task_header.)
    static constexpr auto place =
        [](void* block, std::size_t c,
           const task_header::result_ops* front) __attribute__((always_inline)) {
            const std::size_t slot_bytes = front ? front->slot_bytes : 0;
            auto* h = new (static_cast<std::byte*>(block) + slot_bytes) task_header();
            static_assert(block_cache::classes <= 255, "a class must fit task_header::size_class_");
            h->size_class_ = static_cast<std::uint8_t>(c);
            if (front) {
                h->void_error_.~exception_ptr();  // a null one: nothing to release
                h->result_ops_ = front;
                h->flags_ |= task_header::flag_in_front;
            }
            tl_fresh_header = h;
            return static_cast<void*>(reinterpret_cast<std::byte*>(h) + header_prefix_size);
        };
    // Out of line and called last, so the common path below saves no registers.
    static constexpr auto slow =
        [](std::size_t c, std::size_t total, const task_header::result_ops* front)
            __attribute__((noinline)) {
                void* block = alloc_slow(total, c);
                alloc_stats::on_alloc(slow_counters(), total);
                return place(block, c, front);
            };
    const std::size_t total = (front ? front->slot_bytes : 0) + header_prefix_size + frame_size;
    const std::size_t c = block_cache::class_of(total);
    if (void* block = alloc_fast(c)) [[likely]] {
        alloc_stats::on_alloc(tl_blocks.stats(), total);
        return place(block, c, front);
    }
    return slow(c, total, front);
}

std::size_t task_header::frame_capacity() const noexcept {
    auto* self = const_cast<task_header*>(this);
    std::byte* block =
        reinterpret_cast<std::byte*>(self) - (has(flag_in_front) ? result_ops_->slot_bytes : 0);
    const std::size_t c = size_class_;
    const std::size_t bytes =
        c < block_cache::classes ? block_cache::bytes_of(c) : ::malloc_usable_size(block);
    const std::size_t before =
        static_cast<std::size_t>(reinterpret_cast<std::byte*>(self) + header_prefix_size - block);
    return bytes > before ? bytes - before : 0;
}

// Not inlined: compiled into complete_unshared, the spawn path took 5 instructions more.
[[gnu::noinline]] void task_header::release_block(task_header* h) noexcept {
    // Out of line, so the common path below saves no registers: a header that holds something
    // to destroy (a result slot in front, an exception, a join waker).
    static constexpr auto destroy_then_give_back = [](task_header* h) __attribute__((noinline)) {
        void* block = h;
        if (h->has(flag_in_front)) {
            if (h->has(flag_slot_built)) h->result_ops_->destroy(h->result_slot());
            block = reinterpret_cast<std::byte*>(h) - h->result_ops_->slot_bytes;
        }
        const std::size_t c = h->size_class_;
        h->~task_header();
        free_of_class(block, c, /*counted=*/true);
    };
    // The common case: a task<void> that ended without an exception and with no join waker left.
    if (!h->has(flag_in_front) && !h->void_error_ && !h->join_waker_) [[likely]] {
        const std::size_t c = h->size_class_;
        h->~task_header();  // nothing to destroy
        free_of_class(h, c, /*counted=*/true);
        return;
    }
    destroy_then_give_back(h);
}

void free_task_frame(void* frame) noexcept {
    task_header* h = header_of_frame(frame);
    if (!h->has(task_header::flag_spawned)) {
        // A frame whose promise was never built (a parameter's copy threw) leaves its header
        // fresh: forget it, so that no later frame at the same address is taken for it.
        if (tl_fresh_header == h) [[unlikely]]
            tl_fresh_header = nullptr;
        task_header::release_block(h);  // an inline-awaited task: nothing else refers to the header
        return;
    }
    // A spawned task's frame is gone, but join handles and wakers may still hold the header;
    // the last unref frees the block.
    h->flags_ |= task_header::flag_frame_dead;
}

constinit thread_local task_header* tl_fresh_header = nullptr;

#if BLITZ_INSPECT
namespace {
// The next task id not handed out (ids start at 1; 0 means not assigned), and the calling
// thread's block of ids. relaxed: ids only need to differ.
detail::atomic<std::uint64_t> next_task_id{1};
constexpr std::uint64_t task_id_block = 4096;
constinit thread_local std::uint64_t tl_ids_next = 0;
constinit thread_local std::uint64_t tl_ids_end = 0;
}  // namespace

std::uint64_t task_header::assign_id(bool in_signal_handler) const noexcept {
    std::uint64_t mine;
    if (in_signal_handler) {
        mine = next_task_id.fetch_add(1, std::memory_order_relaxed);
    } else {
        if (tl_ids_next == tl_ids_end) {
            tl_ids_next = next_task_id.fetch_add(task_id_block, std::memory_order_relaxed);
            tl_ids_end = tl_ids_next + task_id_block;
        }
        mine = tl_ids_next++;
    }
    // Ids wrap at 2^48 (never 0): unique among the first 2^48 handed out.
    mine &= id_mask;
    if (mine == 0) mine = 1;
    // The site's bits, set before the task was published, stay as they are: only the id's
    // change, from 0 to an id, once.
    std::uint64_t seen = id_site_.load(std::memory_order_relaxed);
    // relaxed: whoever wins, every reader then sees the same id (the word's one modification
    // order); a loser's id is simply never used.
    while ((seen & id_mask) == 0) {
        if (id_site_.compare_exchange_weak(seen, seen | mine, std::memory_order_relaxed))
            return mine;
    }
    return seen & id_mask;
}
#endif

#if BLITZ_INSPECT && !defined(BLITZ_MODEL_ATOMIC_HEADER)
// The table of spawn sites (task/site_table.hpp): zero pages until spawns use it.
namespace {
constinit site_table<max_spawn_sites> spawn_sites;
}  // namespace

std::uint16_t spawn_site_index_slow(const void* key) noexcept {
    const std::uint16_t index = spawn_sites.index_of(key);
    const unsigned slot = site_cache_slot(key);
    tl_site_cache_keys[slot] = key;
    tl_site_cache_indices[slot] = index;
    return index;
}

std::source_location spawn_site_at(std::uint16_t index) noexcept {
    const void* key = spawn_sites.at(index);
    return key ? std::bit_cast<std::source_location>(key) : std::source_location{};
}
#else
// No table: inspection compiled out (headers keep no site), or the model checker's build (its
// harnesses spawn without sites).
std::uint16_t spawn_site_index_slow(const void*) noexcept { return 0; }
std::source_location spawn_site_at(std::uint16_t) noexcept { return {}; }
#endif

#if defined(BLITZ_MODEL_ATOMIC_HEADER)
// The runtime's submit_spawn is in sched/scheduler.cpp, which the model checker's build does not
// compile: there every scheduler is a harness, called through the interface.
void submit_spawn(task_scheduler* s, task_header* t, std::coroutine_handle<> root,
                  std::source_location site) noexcept {
    (void)site;  // the harnesses' tasks have no site
    t->init_spawned(s, root);
    s->spawn(t);
}
#endif

// ---- lifecycle ----

task_header::poll_outcome task_header::poll(int coop_budget, bool fault_ignore_shield,
                                            bool& stray) noexcept {
    const std::uint64_t s = transition_to_running();
#if BLITZ_INSPECT
    // relaxed: only the poller writes it (RUNNING is exclusive); a dump reads a count
    polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
#endif
    if (cancel_due(s) || (BLITZ_FAULT(fault_ignore_shield) && (s & cancelled))) [[unlikely]] {
        complete(/*cancelled=*/true, 1);
        return poll_outcome::completed;
    }
    // B2: a fresh cooperative budget for this poll (the readiness check may already spend it);
    // none inside blitz::unconstrained: its bit, the byte's sign, spread by an arithmetic shift
    // is -1 or 0, and -1 | budget is -1 (three instructions, no branch).
    static_assert(flag_unconstrained == 0x80);
    tl_coop_budget = coop_budget | (static_cast<std::int8_t>(flags_) >> 7);
    bool yielded = false;  // set by mark_yielded during the resume below
    if (ready_ && !ready_->ready_check(ready_)) {
        // A stray wake: the awaitable it is suspended on is not ready. Stay suspended.
        stray = true;
    } else {
        ready_ = nullptr;
        set_current_task(this);
        resume_point_.resume();
        set_current_task(nullptr);
        // A yield (mark_yielded) reschedules the task as a wake during the poll would have.
        yielded = std::exchange(tl_yield_requested, false);
    }
    if (root().done()) {
        if (!complete_unshared()) complete(/*cancelled=*/false, 1);
        return poll_outcome::completed;
    }
    // Lazy listing (issue 45): a task joins a worker's list when a poll first leaves it
    // suspended, while this thread still owns it (before IDLE is published below). relaxed:
    // only this thread lists it, and a list removes it only after it completed.
    if (reg_owner_.load(std::memory_order_relaxed) == 0) [[unlikely]]
        sched_->list(this);
    return transition_after_poll(yielded) == after_poll::rescheduled ? poll_outcome::rescheduled
                                                                     : poll_outcome::idle;
}

std::uint64_t task_header::finish(bool was_cancelled) noexcept {
    // Completed or cancelled, the frame goes now: its locals and by-value parameters (a channel
    // sender, a lock guard) are released at completion, as with Tokio. The result stays in its
    // slot in front of the header; the memory stays until the last reference.
    destroy_frame();
    const std::uint64_t prev = transition_to_complete(was_cancelled);
    wake_join_waiter(prev);
    return prev;
}

void task_header::complete(bool was_cancelled, std::uint32_t refs) noexcept {
    // Completed on the thread that owns its list entry, or never listed (it completed in its
    // first poll, or was cancelled before it): the list's reference goes with the others and
    // the memory is reused at once. The list is this thread's alone, so taking the
    // task out before the completion is published changes nothing anyone else can see.
    // Completed elsewhere (stolen, or aborted from another thread) while listed: once the
    // completion is published it is handed back to its list's owner, who takes it out and drops
    // the list's reference (issue 45; it used to wait for a sweep). That reference keeps the
    // block alive until then, so the hand-back is the last thing done with it here.
    const task_scheduler::released where = sched_->release(this);
    if (where == task_scheduler::released::mine) ++refs;
    const bool theirs = where == task_scheduler::released::elsewhere;
    // Publishing COMPLETE drops our references in the same RMW, unless the task must still be
    // read afterwards: a join waker is registered (the handle may drop the last other reference
    // as soon as it sees COMPLETE), or it failed and the exception goes to the unhandled handler
    // when nobody is left to see it (the handle was dropped or detached before this).
    const bool failed = has(flag_failed) && !was_cancelled;
    destroy_frame();
    const std::uint64_t prev = transition_to_complete(was_cancelled, failed ? 0 : refs);
    if (failed || (prev & join_waker)) {
        if (!failed && BLITZ_MODEL_DEFECT(complete_drops_with_waker)) return;  // model's control
        wake_join_waiter(prev);
        if (failed && !(prev & join_interest)) [[unlikely]]
            sched_->unhandled_exception(this);
        unref(refs);
        if (theirs) sched_->hand_back(this);
        return;
    }
    assert(refs_of(prev) >= refs && "task reference count underflow");
    if (refs_of(prev) == refs) {
        release_block(this);  // the last reference; the frame is gone
    } else if (theirs) {
        sched_->hand_back(this);
    }
}

bool task_header::complete_unshared() noexcept {
    // relaxed: only this thread lists the task (see poll)
    if (reg_owner_.load(std::memory_order_relaxed) != 0 || has(flag_failed) ||
        !sched_->unlisted_are_mine())
        return false;
    // acquire: whoever dropped the last other reference (a join handle detaching on another
    // thread, a waker's drop) did so with an acq_rel RMW; its writes happen before the free.
    // Two references, both ours: nobody else holds one (a waker kept in the frame would be a
    // third), so nobody can take one or read the state any more, the frame's destructors
    // included. Checked before the frame goes, so a task still held costs complete() nothing
    // twice.
    if (refs_of(state_.load(std::memory_order_acquire)) != 2 &&
        !BLITZ_MODEL_DEFECT(complete_unshared_ignores_refs))
        return false;
    destroy_frame();
    release_block(this);
    return true;
}

void task_header::cancel_for_shutdown() noexcept {
    if (!is_complete()) finish(/*was_cancelled=*/true);
}

bool task_header::try_claim_idle() noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
        if (lifecycle_of(s) != lifecycle::idle) return false;
        // The extra reference is the one transition_after_poll drops (idle) or keeps for the
        // queue entry (rescheduled), as for a task taken from a queue.
        const std::uint64_t ns = with_lifecycle(s, lifecycle::running) + ref_one;
        // acquire: the last poller's frame writes (its release in transition_after_poll)
        if (state_.compare_exchange_weak(s, ns, std::memory_order_acq_rel,
                                         std::memory_order_acquire))
            return true;
    }
}

std::uint64_t task_header::transition_to_running() noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    std::uint64_t ns;
    do {
        assert(lifecycle_of(s) == lifecycle::scheduled);
        ns = with_lifecycle(s, lifecycle::running) & ~notified;
        // acq_rel: acquire the previous runner's frame writes; release nothing new yet
    } while (
        !state_.compare_exchange_weak(s, ns, std::memory_order_acq_rel, std::memory_order_acquire));
    return ns;
}

task_header::after_poll task_header::transition_after_poll(bool yielded) noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
        assert(lifecycle_of(s) == lifecycle::running);
        std::uint64_t ns;
        after_poll r;
        if (yielded || (s & notified) || cancel_due(s)) {
            ns = with_lifecycle(s, lifecycle::scheduled) & ~notified;  // keep the queue ref
            r = after_poll::rescheduled;
        } else {
            ns = with_lifecycle(s, lifecycle::idle) - ref_one;  // the queue entry is gone
            r = after_poll::idle;
        }
        // acq_rel: release our frame writes to whoever schedules or runs it next
        if (state_.compare_exchange_weak(s, ns, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
            return r;
        }
    }
}

std::uint64_t task_header::transition_to_complete(bool was_cancelled, std::uint32_t drop) noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    std::uint64_t ns;
    do {
        ns = with_lifecycle(s, lifecycle::complete) & ~notified;
        if (was_cancelled)
            ns |= cancelled;
        else
            ns &= ~cancelled;
        // The caller's references go too, unless a join waker waits to be woken (see complete)
        // (the model's control drops them regardless).
        if (!(s & join_waker) || BLITZ_MODEL_DEFECT(complete_drops_with_waker))
            ns -= drop * ref_one;
        // acq_rel: release the result to the join side; acquire a registered join waker, and,
        // when this drops the last reference, every other holder's writes
    } while (
        !state_.compare_exchange_weak(s, ns, std::memory_order_acq_rel, std::memory_order_acquire));
    return s;
}

bool task_header::transition_to_scheduled(bool consume, bool fault_enqueue_running) noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
        std::uint64_t ns;
        bool enqueue = false;
        if (BLITZ_FAULT(fault_enqueue_running) && lifecycle_of(s) == lifecycle::running)
            [[unlikely]] {
            ns = s + (consume ? 0 : ref_one);
            if (state_.compare_exchange_weak(s, ns, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
                return true;
            }
            continue;
        }
        switch (lifecycle_of(s)) {
            case lifecycle::idle:
                ns = with_lifecycle(s, lifecycle::scheduled);
                if (!consume) ns += ref_one;  // the new queue entry's reference
                enqueue = true;
                break;
            case lifecycle::running:
            case lifecycle::scheduled:
                // Already in the system: remember the wake. A consumed waker reference can be
                // dropped here: the queue entry or runner still holds one.
                ns = s | notified;
                if (consume) ns -= ref_one;
                break;
            case lifecycle::complete:
            default:
                if (consume) unref();
                return false;
        }
        // acq_rel: the waker's writes reach whoever runs the task next (the model's task_wake
        // control weakens it)
        if (state_.compare_exchange_weak(s, ns, BLITZ_ORDER(task_wake, std::memory_order_acq_rel),
                                         std::memory_order_acquire)) {
            return enqueue;
        }
    }
}

bool task_header::request_cancel() noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
        if (lifecycle_of(s) == lifecycle::complete) return false;
        std::uint64_t ns = s | cancelled;
        bool enqueue = false;
        if (lifecycle_of(s) == lifecycle::idle) {
            ns = with_lifecycle(ns, lifecycle::scheduled) + ref_one;
            enqueue = true;
        }
        if (state_.compare_exchange_weak(s, ns, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
            return enqueue;
        }
    }
}

bool task_header::shield_push() noexcept {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    do {
        // The depth is 8 bits below the ref count: one more would carry into it.
        if (shield_of(s) == max_shield) return false;
        // acq_rel: ordered with the cancel request it defers (request_cancel's CAS)
    } while (!state_.compare_exchange_weak(s, s + shield_one, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
    return true;
}

void task_header::shield_pop() noexcept {
    [[maybe_unused]] auto prev = state_.fetch_sub(shield_one, std::memory_order_acq_rel);
    assert(shield_of(prev) > 0);
}

// ---- join side ----
bool task_header::set_join_waker(waker w) noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    if (lifecycle_of(s) == lifecycle::complete) return false;
    assert(!(s & join_waker) && "one join waiter at a time");
    join_waker_ = std::move(w);  // ours until the bit is published
    for (;;) {
        if (lifecycle_of(s) == lifecycle::complete) {
            join_waker_.reset();
            return false;
        }
        // release: the completer that sees the bit also sees join_waker_
        if (state_.compare_exchange_weak(s, s | join_waker, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
            return true;
        }
    }
}

bool task_header::unset_join_waker() noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
        // The completer owns it now (the model's K5 control forgets that and takes it back).
        if (lifecycle_of(s) == lifecycle::complete &&
            !BLITZ_MODEL_DEFECT(join_withdraw_after_complete))
            return false;
        if (state_.compare_exchange_weak(s, s & ~join_waker, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
            join_waker_.reset();
            return true;
        }
    }
}

void task_header::wake_join_waiter(std::uint64_t prev_state) noexcept {
    if (!(prev_state & join_waker)) return;
    waker w = std::move(join_waker_);
    std::move(w).wake();
}

void task_header::detach_handle() noexcept {
    // The handle holds join_interest (only the handle clears it) and has not detached (only the
    // handle sets it): subtracting the interest and adding `detached` borrow and carry nothing,
    // so one subtraction makes the whole change, with the handle's reference.
    assert((load_state(std::memory_order_relaxed) & (join_interest | detached)) == join_interest);
    drop_refs(ref_one + join_interest - detached, 1);
}

// ---- references ----
void task_header::ref() noexcept {
    // relaxed: taking a reference needs no ordering; the caller already holds one
    [[maybe_unused]] auto prev = state_.fetch_add(ref_one, std::memory_order_relaxed);
    assert(refs_of(prev) < max_refs && "task reference count overflow");
}

void task_header::unref(std::uint32_t n) noexcept { drop_refs(n * ref_one, n); }

void task_header::drop_handle(bool interested) noexcept {
    // One RMW drops the handle's reference and, unless it was detached, its join interest (the
    // bit is set while the handle holds it, so subtracting it clears it).
    drop_refs(ref_one + (interested ? join_interest : 0), 1);
}

void task_header::drop_refs(std::uint64_t dec, std::uint32_t n) noexcept {
    // acq_rel: the last dropper must see every other holder's writes before freeing
    auto prev = state_.fetch_sub(dec, std::memory_order_acq_rel);
    assert(refs_of(prev) >= n && "task reference count underflow");
    if (refs_of(prev) != n) return;
    if (!has(flag_frame_dead)) root().destroy();  // runs free_task_frame: marks it dead
    release_block(this);
}

waker task_header::make_waker() noexcept {
    ref();
    return waker(this, &task_waker_vtable);
}

void task_header::destroy_frame() noexcept {
    if (!has(flag_frame_dead)) root().destroy();
}

// ---- abort, yield and joins from plain threads ----

void abort_task(task_header* t) noexcept {
    if (t->request_cancel()) t->scheduler()->schedule(t, /*is_yield=*/false);
}

namespace {

// A waker that releases a blocked plain thread. Reference-counted so a late wake never touches
// a finished waiter's stack.
struct thread_signal {
    detail::atomic<std::uint32_t> refs{1};
    detail::atomic<std::uint32_t> fired{0};

    static void wake_by_ref(void* p) noexcept {
        auto* s = static_cast<thread_signal*>(p);
        s->fired.store(1, std::memory_order_release);  // release: the result is published
        s->fired.notify_one();
    }
    static void drop(void* p) noexcept {
        auto* s = static_cast<thread_signal*>(p);
        // acq_rel: the last dropper frees after every other use
        if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
    }
    static void wake(void* p) noexcept {
        wake_by_ref(p);
        drop(p);
    }
    static void* clone(void* p) noexcept {
        static_cast<thread_signal*>(p)->refs.fetch_add(1, std::memory_order_relaxed);
        return p;
    }
};
constexpr waker_vtable thread_signal_vtable{thread_signal::wake, thread_signal::wake_by_ref,
                                            thread_signal::clone, thread_signal::drop};

}  // namespace

void wait_blocking(task_header* t) {
    if (current_runtime()) {
        throw std::logic_error(
            "blitz: join()/block_on() would block a runtime worker; use co_await inside tasks");
    }
    // A current-thread runtime runs on this thread until `t` completes.
    if (task_scheduler* s = t->scheduler(); s && s->run_until_complete(t)) return;
    auto* sig = new thread_signal();
    sig->refs.fetch_add(1, std::memory_order_relaxed);  // ours, besides the waker's
    if (t->set_join_waker(waker(sig, &thread_signal_vtable))) {
        // acquire: pairs with the release in wake_by_ref
        while (sig->fired.load(std::memory_order_acquire) == 0) sig->fired.wait(0);
    }
    thread_signal::drop(sig);
}

void cancel_here_if_idle(task_header* t) noexcept {
    // Not idle: it is queued or running, and whoever polls it next completes it as cancelled.
    if (!t->request_cancel()) return;
    // Idle: the cancel request made us the owner of its one queue entry; play the worker that
    // would pop it.
    const std::uint64_t s = t->transition_to_running();
    if (state::cancel_due(s)) {
        t->complete(/*cancelled=*/true, 1);
        return;
    }
    // Shielded: hand it back as a poll that found nothing ready would.
    if (t->transition_after_poll() == task_header::after_poll::rescheduled) {
        t->scheduler()->schedule(t, /*is_yield=*/false);
    }
}

}  // namespace blitz::detail
