// SPDX-License-Identifier: MIT
#pragma once
// wheel_model: a timer_wheel driven side by side with an ordered-multimap model. Shared by the
// wheel's differential test, the stress driver, the fuzz target and the T3 conformance checker;
// each brings its own mix of operations and decides which outcomes it asserts.

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "time/timer_wheel.hpp"

namespace blitz::detail {

class wheel_model {
public:
    explicit wheel_model(std::uint64_t start, timer_wheel::faults f = {})
        : wheel_(start, f), now_(start) {}

    // Arms a timer at `deadline` in both. Returns false when the wheel refused it as already
    // due (the model then treats it as fired at once, as the runtime does).
    bool insert(std::uint64_t deadline) {
        auto e = std::make_unique<timer_entry>();
        e->deadline = deadline;
        const bool linked = wheel_.insert(e.get());
        if (linked) model_.emplace(deadline, e.get());
        entries_.push_back(std::move(e));
        return linked;
    }
    // Cancels the k-th pending timer in deadline order (k < pending()).
    void cancel_nth(std::size_t k) { cancel(std::next(model_.begin(), static_cast<long>(k))); }
    // Cancels the first pending timer due at or after `at`, or the earliest if none is.
    void cancel_at_or_after(std::uint64_t at) {
        auto it = model_.lower_bound(at);
        cancel(it == model_.end() ? model_.begin() : it);
    }

    // What one advance showed: the fired sets agree, nothing fired early, the sizes agree, and
    // the wheel's next expiration is not later than the model's earliest deadline.
    struct step {
        bool same_fired = true;
        bool early = false;
        bool same_size = true;
        bool next_ok = true;
        std::size_t want = 0;
        std::size_t got = 0;
    };
    step advance(std::uint64_t to) {
        std::set<timer_entry*> want, got;
        while (!model_.empty() && model_.begin()->first <= to) {
            want.insert(model_.begin()->second);
            model_.erase(model_.begin());
        }
        step s;
        wheel_.advance(to, [&](timer_entry* e) {
            got.insert(e);
            s.early = s.early || e->deadline > wheel_.elapsed();
        });
        now_ = to;
        s.want = want.size();
        s.got = got.size();
        s.same_fired = want == got;
        s.same_size = wheel_.size() == model_.size();
        const auto next = wheel_.next_expiration();
        s.next_ok = model_.empty() || (next && *next <= model_.begin()->first);
        return s;
    }

    std::uint64_t now() const noexcept { return now_; }
    std::size_t pending() const noexcept { return model_.size(); }
    // The model's earliest pending deadline (pending() > 0).
    std::uint64_t earliest() const noexcept { return model_.begin()->first; }
    const timer_wheel& wheel() const noexcept { return wheel_; }

private:
    void cancel(std::multimap<std::uint64_t, timer_entry*>::iterator it) {
        if (it == model_.end()) return;
        wheel_.remove(it->second);
        model_.erase(it);
    }

    timer_wheel wheel_;
    std::vector<std::unique_ptr<timer_entry>> entries_;
    std::multimap<std::uint64_t, timer_entry*> model_;
    std::uint64_t now_;
};

}  // namespace blitz::detail
