// SPDX-License-Identifier: MIT
#pragma once
// Fills a machine record's I/O backend fields from a one-worker runtime with automatic backend
// selection (O1: every result file says which backend this machine gives and why), and the CPUs
// the process may use. Header-only so that the report library itself does not depend on the
// runtime.

#include "blitz/config.hpp"
#include "blitz/runtime.hpp"
#include "blitz/topology.hpp"
#include "machine_record.hpp"

namespace blitz::report {

inline void fill_io_backend(machine_record& m) {
    // And the CPUs this process may use (issue 47), which the report library cannot read.
    m.cpu_budget = read_cpu_budget().to_string();
    try {
        config c;
        c.workers = 1;
        runtime rt(c);
        const runtime_metrics r = rt.metrics();
        m.io_backend = r.io_backend;
        m.io_backend_reason = r.io_backend_reason;
        m.io_rings = r.io_rings;
    } catch (const std::exception& e) {
        m.io_backend = "unknown";
        m.io_backend_reason = e.what();
    }
}

}  // namespace blitz::report
