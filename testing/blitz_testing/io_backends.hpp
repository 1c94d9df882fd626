// SPDX-License-Identifier: MIT
#pragma once
// The two I/O backends every I/O test runs on (IO.md 7.7): epoll, and prefer_io_uring
// (io_uring where this kernel and process allow it, epoll otherwise, so the suite also passes
// where io_uring is disabled). Automatic selection picks epoll in shared mode (issue 44), so it
// would test epoll twice. For GoogleTest suites parameterized by io_backend_kind:
//   INSTANTIATE_TEST_SUITE_P(Io, Suite, workloads::io_backends(), workloads::io_backend_name);

#include <gtest/gtest.h>

#include <string>

#include "blitz/config.hpp"

namespace blitz::workloads {

inline auto io_backends() {
    return ::testing::Values(io_backend_kind::epoll, io_backend_kind::prefer_io_uring);
}

inline std::string io_backend_name(const ::testing::TestParamInfo<io_backend_kind>& info) {
    return info.param == io_backend_kind::epoll ? "epoll" : "prefer_io_uring";
}

}  // namespace blitz::workloads
