// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// BLITZ_TEST: GoogleTest tests whose body is a coroutine (issue 47; Tokio's #[tokio::test]).
// Header only, and only for those who include it: the library itself does not use GoogleTest.
//
//   #include <blitz/testing/gtest.hpp>
//
//   BLITZ_TEST(Cache, ExpiresEntries) {
//       cache c;
//       co_await c.put("k", 1);
//       EXPECT_EQ(co_await c.get("k"), 1);
//   }
//   BLITZ_TEST_PAUSED(Backoff, DoublesEachTime) {   // the clock jumps to the next timer
//       co_await blitz::sleep(std::chrono::hours(1));  // when nothing else can run
//   }
//
// Each test runs its body on a fresh current-thread runtime (config::current_thread(); the
// paused variant also sets start_paused, and the clock moves to the next timer whenever the
// runtime has nothing to run). The test fails when the body throws, when a task nobody awaits
// ends with an exception, or when a task of the runtime is left unfinished after the body
// returns (listed in the failure with the task dump: join, abort or track them). EXPECT_* work
// in the body; ASSERT_* do not compile in a coroutine (they `return`): use BLITZ_CO_ASSERT.

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "blitz/blitz.hpp"
#include "blitz/detail/inspect.hpp"

namespace blitz::testing {

// What BLITZ_TEST runs: `body()` on a fresh current-thread runtime with `c`'s settings, with
// the checks above. Usable directly for a runtime set up differently.
template <class Body>
void run_coroutine_test(Body body, config c = config::current_thread()) {
    c.flavor = runtime_flavor::current_thread;
    c.workers = 1;
    c.on_unhandled_exception = [](std::exception_ptr e) {
        std::string what = "(not a std::exception)";
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            what = x.what();
        } catch (...) {
        }
        ADD_FAILURE() << "a task nobody awaits ended with an exception: " << what;
    };
    runtime rt(c);
    try {
        rt.block_on(body());
    } catch (const std::exception& e) {
        ADD_FAILURE() << "the test body threw: " << e.what();
    } catch (...) {
        ADD_FAILURE() << "the test body threw something that is not a std::exception";
    }
    if constexpr (detail::inspect_enabled) {
        const runtime_dump d = rt.dump();
        if (!d.tasks.empty() || d.queued_in_run_queues != 0) {
            ADD_FAILURE() << d.tasks.size() << " task(s) left suspended and "
                          << d.queued_in_run_queues
                          << " queued when the test body returned (join, abort or track "
                             "them):\n"
                          << d.to_string();
        }
    }
}

}  // namespace blitz::testing

#define BLITZ_TEST_BODY_NAME_(suite, name) blitz_test_body_##suite##_##name##_

#define BLITZ_TEST_WITH_(suite, name, paused)                                    \
    static ::blitz::task<void> BLITZ_TEST_BODY_NAME_(suite, name)();             \
    TEST(suite, name) {                                                          \
        ::blitz::config blitz_test_config_ = ::blitz::config::current_thread();  \
        blitz_test_config_.start_paused = (paused);                              \
        ::blitz::testing::run_coroutine_test(BLITZ_TEST_BODY_NAME_(suite, name), \
                                             blitz_test_config_);                \
    }                                                                            \
    static ::blitz::task<void> BLITZ_TEST_BODY_NAME_(suite, name)()

// A GoogleTest test whose body is a coroutine, on a fresh current-thread runtime.
#define BLITZ_TEST(suite, name) BLITZ_TEST_WITH_(suite, name, false)
// The same on a paused clock that jumps to the next timer whenever nothing can run (Tokio's
// start_paused with auto-advance; held back while spawn_blocking work runs).
#define BLITZ_TEST_PAUSED(suite, name) BLITZ_TEST_WITH_(suite, name, true)

// ASSERT_TRUE for a coroutine body: records the failure and ends the body (co_return).
#define BLITZ_CO_ASSERT(cond)                                  \
    do {                                                       \
        if (!(cond)) {                                         \
            ADD_FAILURE() << "BLITZ_CO_ASSERT failed: " #cond; \
            co_return;                                         \
        }                                                      \
    } while (false)
