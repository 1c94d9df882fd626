// SPDX-License-Identifier: MIT
// The negative control of the clang thread-safety check (ctest repo.thread_safety_control): this
// file writes a guarded field without its mutex and must fail to compile under
// -Werror=thread-safety. If it compiles, the annotations in blitz/detail/mutex.hpp have stopped
// working.
#include "blitz/detail/mutex.hpp"

namespace {
struct counter {
    blitz::detail::mutex mu;
    int n BLITZ_GUARDED_BY(mu) = 0;
    void locked_add() {
        blitz::detail::lock_guard l(mu);
        ++n;
    }
    void unlocked_add() { ++n; }  // the defect the check must catch
};
}  // namespace

int main() {
    counter c;
    c.locked_add();
    c.unlocked_add();
}
