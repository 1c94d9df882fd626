// SPDX-License-Identifier: MIT
#pragma once
// The randomized mixed workload behind `blitz stress` (issue 19): rounds of spawn trees, chains,
// yields, the sync primitives, channels, oneshots, timers, select and timeout with aborts,
// blocking jobs, and byte streams over Unix pairs and loopback TCP with timed-out and aborted
// reads, each with an exactly-once oracle, on runtimes of random worker counts that are
// built and shut down again every few rounds. One seed replays the same sequence of rounds (the
// interleavings inside a round are the machine's).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "blitz/testing/runtime_faults.hpp"

namespace blitz::stress_mix {

struct options {
    double seconds = 20;                        // stop after this long...
    std::uint64_t rounds = 0;                   // ...or after this many rounds (when not 0)
    std::vector<unsigned> workers{1, 2, 4, 8};  // each runtime picks one
    unsigned rounds_per_runtime = 40;           // a fresh runtime (and a shutdown) this often
    std::uint64_t seed = 0;
    std::string only;            // run only the workloads whose name contains this
    double progress_every = 60;  // seconds between progress lines
    std::function<void(const std::string&)> progress;  // receives the progress lines
    testing::runtime_faults faults;  // deliberate defects, for the oracles' negative controls
    // busy: every runtime runs in busy mode, pinned compact (worker counts above this machine's
    // eligible PUs are left out: spinning workers must not share a CPU).
    io_mode_kind io_mode = io_mode_kind::shared;
    // inspect: a thread takes dumps and asks find_lost of every runtime while its rounds run;
    // a lost task reported is a failure (row "inspect"; the workloads leak nothing).
    bool inspect = false;
    // The inspector's negative control: every runtime also runs one task that can never be
    // woken (it waits on a channel whose only sender is in its own frame); the inspector must
    // report it and fail the run.
    bool seed_leak = false;
};

// The runtime faults `blitz stress --fault NAME` accepts (each one a workload's oracle catches),
// as "name: what it breaks" lines; false if `name` is not one of them.
std::vector<std::string> fault_names();
bool set_fault(testing::runtime_faults& f, const std::string& name);

struct row {
    std::string name;
    std::uint64_t rounds = 0;
    std::uint64_t ops = 0;  // tasks, values or operations checked by the oracle
    std::uint64_t failures = 0;
    double seconds = 0;
    std::string first_failure;  // with the round number and seed
};

struct result {
    std::vector<row> rows;
    std::uint64_t rounds = 0;
    std::uint64_t runtimes = 0;
    double seconds = 0;
    std::uint64_t seed = 0;
    bool ok() const noexcept {
        for (const row& r : rows)
            if (r.failures) return false;
        return true;
    }
};

// The workloads' names, in the order the summary lists them.
std::vector<std::string> workload_names();

result run(const options& o);

}  // namespace blitz::stress_mix
