// SPDX-License-Identifier: MIT
#pragma once
// Every public header includes this first: without C++20 coroutines a user gets this one
// message (and the compiler stops), not a page of errors from inside the headers.
#if __cplusplus < 202002L || !defined(__cpp_impl_coroutine)
#error \
    "blitz needs C++20 with coroutines: compile with -std=c++20 (g++ 11+ or clang 14+; see the README's Compilers section)"
#include "blitz stops here: the rest of this header needs C++20"  // a fatal error ends the compile
#endif
