// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
#include "blitz/dump.hpp"
// blitz::join_set and blitz::join_map: spawned tasks whose outcomes come back in the order they
// finish (Tokio's JoinSet and JoinMap); blitz::join_result, one such outcome.

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "blitz/detail/join_set_core.hpp"
#include "blitz/detail/select_branch.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/runtime.hpp"
#include "blitz/task.hpp"

namespace blitz {

template <class T>
class local_set;

namespace detail {
template <class T, class K>
class join_set_base;
}  // namespace detail

// What one task of a join_set or join_map ended with: its value, the exception it threw, or
// cancelled (aborted before it completed, K4). Tokio's Result<T, JoinError>.
template <class T>
class join_result {
public:
    // The task's id (join_handle::id).
    std::uint64_t id() const noexcept { return id_; }
    bool has_value() const noexcept { return what_.index() == 0; }
    bool is_cancelled() const noexcept { return what_.index() == 2; }
    bool has_exception() const noexcept { return what_.index() == 1; }
    explicit operator bool() const noexcept { return has_value(); }
    // The exception the task ended with (nullptr unless has_exception()).
    std::exception_ptr exception() const noexcept {
        return has_exception() ? std::get<1>(what_) : nullptr;
    }
    // The value; rethrows the task's exception, or throws task_cancelled.
    T get() && {
        if (has_exception()) std::rethrow_exception(std::get<1>(what_));
        if (is_cancelled()) throw task_cancelled();
        if constexpr (!std::is_void_v<T>) return std::move(std::get<0>(what_));
    }
    // The value in place (has_value() must hold).
    template <class U = T>
        requires(!std::is_void_v<U>)
    U& value() & {
        return std::get<0>(what_);
    }

private:
    template <class, class>
    friend class detail::join_set_base;
    struct cancelled_tag {};
    using stored = detail::value_or_unit<T>;
    join_result(std::uint64_t id, std::variant<stored, std::exception_ptr, cancelled_tag> w)
        : id_(id), what_(std::move(w)) {}
    // Reads a completed task's outcome out of its handle (once).
    static join_result from(join_handle<T>& h) {
        const std::uint64_t id = h.id();
        if (h.is_cancelled())
            return join_result(id, decltype(what_)(std::in_place_index<2>, cancelled_tag{}));
        try {
            if constexpr (std::is_void_v<T>) {
                detail::join_handle_access::take(h);
                return join_result(id, decltype(what_)(std::in_place_index<0>));
            } else {
                return join_result(id, decltype(what_)(std::in_place_index<0>,
                                                       detail::join_handle_access::take(h)));
            }
        } catch (...) {
            return join_result(id,
                               decltype(what_)(std::in_place_index<1>, std::current_exception()));
        }
    }

    std::uint64_t id_;
    std::variant<stored, std::exception_ptr, cancelled_tag> what_;
};

namespace detail {

// One task of a set: its handle, and the key a join_map gave it.
template <class T, class K>
struct join_entry final : join_entry_base {
    join_entry(std::shared_ptr<join_set_core> c, K k)
        : join_entry_base(std::move(c)), key(std::move(k)) {}
    join_handle<T> h;
    K key;
};

// What join_set and join_map share: spawning into the core, join_next, aborts and the drop.
template <class T, class K>
class join_set_base {
protected:
    using entry = join_entry<T, K>;

public:
    join_set_base() : core_(std::make_shared<join_set_core>()) {}
    join_set_base(const join_set_base&) = delete;
    join_set_base& operator=(const join_set_base&) = delete;
    // A moved-from set is empty and may be used again.
    join_set_base(join_set_base&& o) noexcept : core_(std::move(o.core_)) {}
    join_set_base& operator=(join_set_base&& o) noexcept {
        if (this != &o) {
            if (core_) core_->release_all(/*abort=*/true);
            core_ = std::move(o.core_);
        }
        return *this;
    }
    // Destroying the set aborts every task still in it (idle ones at once; a running one when its
    // poll returns); outcomes not yet joined are dropped.
    virtual ~join_set_base() {
        if (core_) core_->release_all(/*abort=*/true);
    }

    // Tasks in the set: running, or finished and not yet returned by join_next.
    std::size_t size() const { return core_ ? core_->size() : 0; }
    bool empty() const { return size() == 0; }

    // Requests cancellation of every task in the set; each still comes out of join_next, as
    // cancelled, or with its outcome if it finished first.
    void abort_all() noexcept {
        if (core_) core_->abort_all();
    }
    // Lets every task run on outside the set; outcomes not yet joined are dropped.
    void detach_all() noexcept {
        if (core_) core_->release_all(/*abort=*/false);
        forget_keys();
    }

    // co_await set.join_next(): the outcome of the next task to finish, in the order they finish;
    // std::nullopt once the set is empty. Cancel safe: the outcome is taken out of the set only
    // when the awaiting code resumes, so a join_next that loses a select, or whose task is
    // aborted, leaves it for the next join_next. One join_next at a time.
    class next_awaiter : join_wait {
    public:
        explicit next_awaiter(join_set_base& s) : join_wait(s.core()), set_(s) {}
        using join_wait::await_ready;
        using join_wait::await_suspend;
        auto await_resume() { return set_.take(join_wait::take_ready()); }

    private:
        join_set_base& set_;
    };

    // The outcome of a task that has finished, without waiting; std::nullopt if none has.
    auto try_join_next() { return take(core_ ? core_->pop_ready() : nullptr); }

    // Aborts every task and waits until all of them are gone, dropping their outcomes.
    task<void> shutdown() {
        abort_all();
        while (!empty()) (void)co_await next_awaiter(*this);
    }

protected:
    using outcome = std::conditional_t<std::is_same_v<K, std::monostate>, join_result<T>,
                                       std::pair<K, join_result<T>>>;

    // Adds a freshly spawned task (its handle in `e`).
    entry* adopt(std::unique_ptr<entry> e) {
        e->task = e->h.header_for_scope();
        return static_cast<entry*>(core_->adopt(e.release()));
    }
    join_set_core& core() {
        if (!core_) core_ = std::make_shared<join_set_core>();  // moved from: a fresh one
        return *core_;
    }
    template <class Spawn>
    entry* spawn_entry(K key, Spawn&& spawn) {
        core();
        auto e = std::make_unique<entry>(core_, std::move(key));
        e->h = spawn();
        return adopt(std::move(e));
    }
    // Called when an entry leaves the set through join_next (join_map forgets its key).
    virtual void on_taken(entry&) noexcept {}
    virtual void forget_keys() noexcept {}

    std::shared_ptr<join_set_core> core_;

private:
    std::optional<outcome> take(join_entry_base* b) {
        if (!b) return std::nullopt;
        auto* e = static_cast<entry*>(b);
        on_taken(*e);
        join_entry_base::unref_holder hold(e);  // the set's reference, dropped after the read
        auto r = join_result<T>::from(e->h);
        if constexpr (std::is_same_v<K, std::monostate>) {
            return std::optional<outcome>(std::move(r));
        } else {
            return std::optional<outcome>(std::in_place, std::move(e->key), std::move(r));
        }
    }
};

}  // namespace detail

// A set of spawned tasks whose outcomes come back as they finish (Tokio's JoinSet).
//
// 1. spawn(t) starts t on the current runtime (spawn(rt, t) on rt, from any thread) and returns
//    its id; the set holds its join handle.
// 2. co_await join_next() returns the next finished task's join_result, in completion order,
//    and std::nullopt once the set is empty; try_join_next() does not wait.
// 3. abort_all() cancels every task (each still comes out of join_next); shutdown() aborts and
//    waits for all; detach_all() lets them run on, unobserved; destroying the set aborts them.
//
// Invariants (X8): each task's outcome comes out of join_next exactly once, or is dropped only
// by detach_all or the set's destruction; a join_next that loses a select or is aborted takes
// nothing.
// Thread-safety: the set is used by one task or thread at a time (like a std::vector); its
// tasks finish on any worker. A moved-from set is empty and may be used again. One allocation
// per set, two per task (the task and its entry).
template <class T>
class join_set : public detail::join_set_base<T, std::monostate> {
    using base = detail::join_set_base<T, std::monostate>;

public:
    join_set() = default;
    join_set(join_set&&) noexcept = default;
    join_set& operator=(join_set&&) noexcept = default;
    ~join_set() override = default;

    // Spawns t on the current runtime (inside a task); returns its id.
    std::uint64_t spawn(task<T> t, std::source_location site = std::source_location::current()) {
        return base::spawn_entry({}, [&] { return blitz::spawn(std::move(t), site); })->h.id();
    }
    // Spawns t on rt (from any thread).
    std::uint64_t spawn(runtime& rt, task<T> t,
                        std::source_location site = std::source_location::current()) {
        return base::spawn_entry({}, [&] { return rt.spawn(std::move(t), site); })->h.id();
    }
    // Spawns t pinned to the calling worker (blitz::spawn_local; inside a task), or to worker
    // `worker` of rt (runtime::spawn_pinned; from any thread).
    std::uint64_t spawn_local(task<T> t,
                              std::source_location site = std::source_location::current()) {
        return base::spawn_entry({}, [&] { return blitz::spawn_local(std::move(t), site); })
            ->h.id();
    }
    std::uint64_t spawn_pinned(runtime& rt, unsigned worker, task<T> t,
                               std::source_location site = std::source_location::current()) {
        return base::spawn_entry({}, [&] { return rt.spawn_pinned(worker, std::move(t), site); })
            ->h.id();
    }

private:
    template <class>
    friend class local_set;
    // local_set's spawn: onto the pinned home it recorded.
    std::uint64_t spawn_on(detail::task_scheduler* home, task<T> t, std::source_location site) {
        return base::spawn_entry({}, [&] { return detail::spawn_on(home, std::move(t), site); })
            ->h.id();
    }

public:
    typename base::next_awaiter join_next() { return typename base::next_awaiter(*this); }

    // Awaits every task and returns their values in completion order; rethrows the first
    // exception (or task_cancelled) in that order, after which the rest stay in the set.
    auto join_all() -> task<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>> {
        if constexpr (std::is_void_v<T>) {
            while (auto r = co_await join_next()) std::move(*r).get();
        } else {
            std::vector<T> out;
            while (auto r = co_await join_next()) out.push_back(std::move(*r).get());
            co_return out;
        }
    }
};

// A set of spawned tasks, each under a key, whose outcomes come back with their keys as they
// finish (tokio_util's JoinMap).
//
// 1. spawn(key, t) starts t under key. A task already under that key is aborted and leaves the
//    map at once: its outcome is never returned (as JoinMap::spawn does).
// 2. co_await join_next() returns {key, join_result} of the next task to finish, and
//    std::nullopt once the map is empty.
// 3. abort(key) cancels that task (it still comes out of join_next, as cancelled unless it
//    finished first); contains(key); abort_all, shutdown, detach_all and destruction as in
//    join_set.
//
// Invariants (X8): as join_set's; a key names at most one task in the map.
// Thread-safety: as join_set's.
template <class K, class T, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class join_map : public detail::join_set_base<T, K> {
    using base = detail::join_set_base<T, K>;
    using entry = typename base::entry;

public:
    join_map() = default;
    join_map(join_map&&) noexcept = default;
    join_map& operator=(join_map&& o) noexcept {
        if (this != &o) {
            base::operator=(std::move(o));
            by_key_ = std::move(o.by_key_);
        }
        return *this;
    }
    ~join_map() override = default;

    std::uint64_t spawn(K key, task<T> t,
                        std::source_location site = std::source_location::current()) {
        return insert(std::move(key), [&] { return blitz::spawn(std::move(t), site); });
    }
    std::uint64_t spawn(runtime& rt, K key, task<T> t,
                        std::source_location site = std::source_location::current()) {
        return insert(std::move(key), [&] { return rt.spawn(std::move(t), site); });
    }

    typename base::next_awaiter join_next() { return typename base::next_awaiter(*this); }

    bool contains(const K& key) const { return by_key_.count(key) != 0; }
    // Cancels the task under key; false if there is none.
    bool abort(const K& key) const noexcept {
        auto it = by_key_.find(key);
        if (it == by_key_.end()) return false;
        it->second->h.abort();
        return true;
    }
    // The keys of every task in the map, in no particular order.
    std::vector<K> keys() const {
        std::vector<K> out;
        out.reserve(by_key_.size());
        for (const auto& [k, e] : by_key_) out.push_back(k);
        return out;
    }

private:
    template <class Spawn>
    std::uint64_t insert(K key, Spawn&& spawn) {
        this->core();
        auto e = std::make_unique<entry>(this->core_, key);
        e->h = spawn();
        const std::uint64_t id = e->h.id();
        auto it = by_key_.find(key);
        if (it != by_key_.end()) {
            entry* old = std::exchange(it->second, nullptr);
            this->core_->release_one(old, /*abort=*/true);
            it->second = base::adopt(std::move(e));
        } else {
            by_key_.emplace(std::move(key), base::adopt(std::move(e)));
        }
        return id;
    }
    void on_taken(entry& e) noexcept override { by_key_.erase(e.key); }
    void forget_keys() noexcept override { by_key_.clear(); }

    std::unordered_map<K, entry*, Hash, Eq> by_key_;  // the owner's only
};

}  // namespace blitz
