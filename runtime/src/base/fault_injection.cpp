// SPDX-License-Identifier: MIT
#include "blitz/testing/fault_injection.hpp"

#include <array>

#include "base/atomic.hpp"
#include "blitz/detail/mutex.hpp"

namespace blitz {
namespace {

struct armed_site {
    unsigned skip = 0;
    unsigned times = 0;
};

struct injection_state {
    detail::atomic<unsigned> armed{0};  // sites with failures left: the fast path's only read
    detail::mutex mu;
    std::array<armed_site, testing::failure_site_count> sites BLITZ_GUARDED_BY(mu){};
};

injection_state& injection() {
    static injection_state s;
    return s;
}

}  // namespace

namespace testing {

void fail_next(failure_site site, unsigned times, unsigned skip) noexcept {
    injection_state& s = injection();
    detail::lock_guard l(s.mu);
    armed_site& a = s.sites[static_cast<unsigned>(site)];
    if (a.times == 0 && times != 0) s.armed.fetch_add(1, std::memory_order_release);
    if (a.times != 0 && times == 0) s.armed.fetch_sub(1, std::memory_order_release);
    a = armed_site{skip, times};
}

void clear_failures() noexcept {
    injection_state& s = injection();
    detail::lock_guard l(s.mu);
    for (armed_site& a : s.sites) a = armed_site{};
    s.armed.store(0, std::memory_order_release);
}

}  // namespace testing

namespace detail {

bool take_injected_failure(::blitz::testing::failure_site site) noexcept {
    injection_state& s = injection();
    // acquire: pairs with fail_next's release (a test arms a site, then starts the request)
    if (s.armed.load(std::memory_order_acquire) == 0) return false;
    lock_guard l(s.mu);
    armed_site& a = s.sites[static_cast<unsigned>(site)];
    if (a.times == 0) return false;
    if (a.skip > 0) {
        --a.skip;
        return false;
    }
    if (--a.times == 0) s.armed.fetch_sub(1, std::memory_order_release);
    return true;
}

}  // namespace detail
}  // namespace blitz
