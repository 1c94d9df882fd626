// SPDX-License-Identifier: MIT
#include "task/block_cache.hpp"

#include <new>
#include <utility>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz::detail::blocks {

// Freed task blocks (and the oneshot channels' states) are kept per thread, by size class, and
// reused by the next allocation of that class on that thread. Work that frees its blocks where it
// allocated them (fork-join on one worker, a chain of spawns) never leaves the thread's cache.
// Work that frees them elsewhere does: the tasks a plain thread or one spawning worker makes run
// and end on other workers, whose caches fill while the spawner's stay empty. Before the depot,
// every such spawn went to the heap and every such free to the heap's arena lock of the thread
// that allocated the block (about one allocation per spawn in spawn_many_local and the remote
// spawn rows).
//
// So the caches trade whole magazines of blocks (magazine_of) through a runtime-wide depot, as in
// Bonwick's magazine allocator: a thread holds two magazines per class, the one it takes from and
// gives to, and a spare that is either full or empty. A free that finds both full hands the spare
// to the depot; a take that finds both empty takes a full one from it. Between two visits to the
// depot a thread makes a magazine's worth of allocations or frees of that class, so the depot's
// lock is taken once per magazine at most (128 blocks for a task of up to 128 bytes), and not at
// all by work whose frees balance its allocations on each thread. Blocks are allocated at their
// class size, so any block of a class fits any request of it.
//
// Bounds: a thread's cache holds two magazines of each class (magazine_of: up to 128 blocks and
// 16 KiB each, so 2 MiB in all), the depot no more than depot_bytes; past them blocks go back to
// the heap. A thread's
// cache is returned to the heap when the thread exits; the depot lives as long as the process.
// Off under AddressSanitizer (a use after free must still fault), and the depot is off in the
// model checker's build (its fibers share one thread's cache).

namespace {

#ifdef BLITZ_MODEL_ATOMIC_HEADER
constexpr bool depot_built = false;
#else
constexpr bool depot_built = true;
#endif

static_assert(sizeof(free_block) <= bytes_of(0), "a free block must fit the smallest class");

constexpr std::size_t bytes_of_magazine(std::size_t c) noexcept {
    return magazine_of(c) * bytes_of(c);
}

// Full magazines, a stack per class under its own lock, for any thread.
class depot {
public:
    // A full magazine of class c (a chain of magazine_of(c) blocks), or nullptr.
    free_block* take(std::size_t c) noexcept {
        if (!enabled_.load(std::memory_order_relaxed)) return nullptr;  // relaxed: a test switch
        per_class& k = classes_[c];
        free_block* m;
        {
            lock_guard l(k.mu);
            m = k.full;
            if (!m) return nullptr;
            k.full = m->next_full;
            --k.count;
        }
        // relaxed: a bound on memory held, read by puts; nothing is published through it
        held_.fetch_sub(bytes_of_magazine(c), std::memory_order_relaxed);
        return m;
    }
    // Holds the full magazine m of class c; false (the caller keeps it) at the bytes cap.
    bool put(std::size_t c, free_block* m) noexcept {
        if (!enabled_.load(std::memory_order_relaxed)) return false;  // relaxed: a test switch
        const std::size_t b = bytes_of_magazine(c);
        // relaxed: see take; a put that would pass the cap undoes its claim
        if (held_.fetch_add(b, std::memory_order_relaxed) + b > depot_bytes) {
            held_.fetch_sub(b, std::memory_order_relaxed);
            return false;
        }
        per_class& k = classes_[c];
        lock_guard l(k.mu);
        m->next_full = k.full;
        k.full = m;
        ++k.count;
        return true;
    }
    std::size_t magazines(std::size_t c) noexcept {
        lock_guard l(classes_[c].mu);
        return classes_[c].count;
    }
    // Every magazine back to the heap.
    void drain() noexcept {
        for (std::size_t c = 0; c < classes; ++c) {
            per_class& k = classes_[c];
            free_block* m;
            {
                lock_guard l(k.mu);
                m = std::exchange(k.full, nullptr);
                k.count = 0;
            }
            while (m) {
                free_block* next_full = m->next_full;
                held_.fetch_sub(bytes_of_magazine(c),
                                std::memory_order_relaxed);  // relaxed: see take
                while (m) ::operator delete(std::exchange(m, m->next));
                m = next_full;
            }
        }
    }
    std::size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
    void enable(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }

private:
    struct alignas(cache_line) per_class {
        mutex mu;
        free_block* full BLITZ_GUARDED_BY(mu) = nullptr;
        std::size_t count BLITZ_GUARDED_BY(mu) = 0;
    };
    per_class classes_[classes];
    alignas(cache_line) atomic<std::size_t> held_{0};
    atomic<bool> enabled_{true};
};

// Never destroyed: a thread's blocks may come back after static destructors have run.
depot& the_depot() noexcept {
    static depot* d = new depot;
    return *d;
}

thread_local std::uint64_t tl_heap_takes = 0;

void release(free_block* b) noexcept {
    while (b) ::operator delete(std::exchange(b, b->next));
}

// Returns this thread's cached blocks to the heap when the thread exits; blocks freed on it after
// that (by later thread-local destructors) go to the heap directly.
struct exit_hook {
    exit_hook() = default;
    exit_hook(const exit_hook&) = delete;
    exit_hook& operator=(const exit_hook&) = delete;
    ~exit_hook() {
        thread_blocks& t = tl_blocks;
        t.retired = true;
        for (thread_blocks::per_class& k : t.classes) {
            release(std::exchange(k.loaded, nullptr));
            release(std::exchange(k.spare, nullptr));
            k.loaded_n = k.spare_n = k.room = 0;
        }
    }
};

// True while this thread may cache blocks; arms the cache on the first call.
bool arm() noexcept {
    thread_blocks& t = tl_blocks;
    if (!t.armed && !t.retired) {
        thread_local exit_hook hook;  // constructed (its destructor registered) here, once
        (void)hook;
        t.armed = true;
        for (std::size_t c = 0; c < classes; ++c) t.classes[c].room = magazine_of(c);
    }
    return !t.retired;
}

void swap_magazines(thread_blocks::per_class& k, std::size_t c) noexcept {
    std::swap(k.loaded, k.spare);
    std::swap(k.loaded_n, k.spare_n);
    k.room = magazine_of(c) - k.loaded_n;
}

}  // namespace

constinit thread_local thread_blocks tl_blocks{};

// The loaded magazine is empty: the spare if it is full, else a full magazine from the depot,
// else the heap.
void* take_slow(std::size_t c) {
    thread_blocks::per_class& k = tl_blocks.classes[c];
    if (k.spare_n != 0) {
        swap_magazines(k, c);
        return take(c);
    }
    if (depot_built && arm()) {
        if (free_block* m = the_depot().take(c)) {
            k.loaded = m;
            k.loaded_n = magazine_of(c);
            k.room = 0;
            return take(c);
        }
    }
    ++tl_heap_takes;
    return ::operator new(bytes_of(c));
}

// The loaded magazine is full, or the cache is not armed yet, or it has retired.
void give_slow(void* p, std::size_t c) noexcept {
    thread_blocks::per_class& k = tl_blocks.classes[c];
    if (!arm()) {
        ::operator delete(p);
        return;
    }
    if (k.room == 0) {  // still 0 after arming: the loaded magazine is full
        if (k.spare_n == 0) {
            swap_magazines(k, c);
        } else if (depot_built && the_depot().put(c, k.spare)) {
            // Both were full: the spare went to the depot, and the loaded one is the spare now.
            k.spare = std::exchange(k.loaded, nullptr);
            k.spare_n = std::exchange(k.loaded_n, 0);
            k.room = magazine_of(c);
        } else {
            ::operator delete(p);  // the depot is at its bound: the cache stays as it is
            return;
        }
    }
    give(p, c);
}

std::uint64_t heap_takes_this_thread() noexcept { return tl_heap_takes; }
std::size_t depot_magazines(std::size_t c) noexcept {
    return depot_built ? the_depot().magazines(c) : 0;
}
std::size_t depot_held_bytes() noexcept { return depot_built ? the_depot().held() : 0; }
void drain_depot() noexcept {
    if constexpr (depot_built) the_depot().drain();
}
void set_depot_enabled(bool on) noexcept {
    if constexpr (depot_built) the_depot().enable(on);
}

}  // namespace blitz::detail::blocks
