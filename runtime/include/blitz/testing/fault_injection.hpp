// SPDX-License-Identifier: MIT
#pragma once
// Deliberate resource failures for tests (issue 19): the faults build (BLITZ_FAULTS=1, the
// library the test suites link) can make the next few requests at one place fail, the way the
// real failure would: an allocation throws std::bad_alloc, a thread start throws
// std::system_error (resource_unavailable_try_again). The library users link compiles every
// such place out; there, these functions arm nothing that is ever looked at.

#include "blitz/detail/faults.hpp"

namespace blitz::testing {

enum class failure_site : unsigned {
    task_alloc,       // the block of a spawned (or inline-awaited) task
    channel_alloc,    // a channel's shared state
    worker_thread,    // a worker thread started by the runtime's constructor
    blocking_thread,  // a blocking-pool thread started for a job
};
inline constexpr unsigned failure_site_count = 4;

// The next `times` requests at `site` fail, after `skip` that succeed.
void fail_next(failure_site site, unsigned times = 1, unsigned skip = 0) noexcept;
// Disarms every site.
void clear_failures() noexcept;

}  // namespace blitz::testing

namespace blitz::detail {
// Consumes one armed failure of `site`, if any.
bool take_injected_failure(::blitz::testing::failure_site site) noexcept;
}  // namespace blitz::detail

#if BLITZ_FAULTS
#define BLITZ_INJECTED_FAILURE(site) \
    ::blitz::detail::take_injected_failure(::blitz::testing::failure_site::site)
#else
#define BLITZ_INJECTED_FAILURE(site) false
#endif
