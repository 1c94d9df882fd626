// SPDX-License-Identifier: MIT
#include "stress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include "base/os.hpp"
#include "blitz/config.hpp"
#include "mix.hpp"
#include "table.hpp"

namespace blitz::cli {

namespace {

const char* const stress_help =
    "usage: blitz stress [--seconds N | --rounds N] [--workers LIST] [--seed S] [--only NAME]\n"
    "       blitz stress --list\n"
    "Rounds of randomized workloads (spawn trees, chains, yields, mutex, semaphore with aborts,\n"
    "MPMC channels, oneshot races, select and timeout with aborts, timers, blocking jobs, byte\n"
    "streams over Unix pairs and loopback TCP with timed-out and aborted reads), each\n"
    "checked by an exactly-once oracle, on runtimes of random worker counts that are shut down\n"
    "and built again every few rounds. Stops at the first failure and prints how to replay it.\n"
    "  --seconds N         run for N seconds (default 20)\n"
    "  --rounds N          run N rounds instead\n"
    "  --workers LIST      worker counts the runtimes pick from (default 1,2,4,8)\n"
    "  --seed S            the seed (default: random, printed); the same seed replays the same\n"
    "                      rounds (not the same interleavings)\n"
    "  --only NAME         only the workloads whose name contains NAME\n"
    "  --progress-every N  seconds between progress lines (default 60)\n"
    "  --io-mode M         shared (default) or busy: busy runtimes are pinned compact, and\n"
    "                      worker counts above this machine's CPUs are left out\n"
    "  --list              the workloads, one per line\n"
    "  --inspect           a thread dumps the running runtime and asks for lost tasks\n"
    "                      throughout; any lost task reported fails the run (the workloads\n"
    "                      leak nothing, so a report would be a false one: issue 46)\n"
    "  --fault NAME        put a deliberate defect into the runtime, to see an oracle catch it\n"
    "                      (the negative control; --list-faults names them)\n"
    "exit status: 0 passed, 1 a check failed, 2 a wrong command line (nothing ran), 3 a round "
    "hung\n";

}  // namespace

int stress_main(args& a) {
    stress_mix::options o;
    o.seed = std::random_device{}();
    while (!a.done()) {
        const std::string f = a.next();
        if (f == "--help" || f == "-h") {
            std::cout << stress_help;
            return exit_pass;
        }
        if (f == "--list") {
            a.no_value();
            for (const auto& n : stress_mix::workload_names()) std::cout << n << "\n";
            return exit_pass;
        }
        if (f == "--list-faults") {
            a.no_value();
            for (const auto& n : stress_mix::fault_names()) std::cout << n << "\n";
            return exit_pass;
        }
        if (f == "--fault") {
            const std::string name = a.value();
            if (!stress_mix::set_fault(o.faults, name))
                throw usage_error("--fault " + name + " is not one of blitz stress --list-faults");
        } else if (f == "--seconds") {
            o.seconds = static_cast<double>(a.count(7 * 24 * 3600));
        } else if (f == "--rounds") {
            o.rounds = a.count();
        } else if (f == "--workers") {
            o.workers = a.counts(config::max_workers);
        } else if (f == "--seed") {
            o.seed = parse_positive("--seed", a.value(), ~0ul);
        } else if (f == "--only") {
            o.only = a.value();
            bool any = false;
            for (const auto& n : stress_mix::workload_names())
                any = any || n.find(o.only) != std::string::npos;
            if (!any)
                throw usage_error("--only " + o.only +
                                  " matches no workload (blitz stress --list)");
        } else if (f == "--progress-every") {
            o.progress_every = static_cast<double>(a.count());
        } else if (f == "--io-mode") {
            o.io_mode = parse_io_mode(a.value());
        } else if (f == "--inspect") {
            a.no_value();
            o.inspect = true;
        } else if (f == "--seed-leak") {
            a.no_value();
            o.seed_leak = true;
        } else {
            a.unknown();
        }
    }
    if (o.io_mode == io_mode_kind::busy) {
        // Busy workers are pinned one per CPU: counts above the CPUs this process may use go.
        const unsigned cpus =
            std::max<unsigned>(1, static_cast<unsigned>(detail::os::this_thread_cpus().size()));
        std::erase_if(o.workers, [&](unsigned w) { return w > cpus; });
        if (o.workers.empty()) o.workers = {cpus};
    }
    std::cerr << "stress: seed " << o.seed << ", "
              << (o.rounds ? std::to_string(o.rounds) + " rounds"
                           : std::to_string(static_cast<long>(o.seconds)) + " s")
              << ", workers from {";
    for (std::size_t i = 0; i < o.workers.size(); ++i) std::cerr << (i ? "," : "") << o.workers[i];
    std::cerr << "}" << (o.io_mode == io_mode_kind::busy ? ", busy mode (pinned compact)" : "")
              << "\n";
    o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
    const stress_mix::result r = stress_mix::run(o);

    table t({"workload", "rounds", "checked", "failures", "time (s)"});
    for (const auto& row : r.rows) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.1f", row.seconds);
        t.add({row.name, std::to_string(row.rounds), std::to_string(row.ops),
               std::to_string(row.failures), secs});
    }
    t.print(std::cout);
    std::printf("%llu rounds on %llu runtimes in %.1f s, seed %llu: %s\n",
                static_cast<unsigned long long>(r.rounds),
                static_cast<unsigned long long>(r.runtimes), r.seconds,
                static_cast<unsigned long long>(r.seed), r.ok() ? "passed" : "FAILED");
    for (const auto& row : r.rows)
        if (!row.first_failure.empty())
            std::printf("%s: %s\n", row.name.c_str(), row.first_failure.c_str());
    return r.ok() ? exit_pass : exit_failed;
}

}  // namespace blitz::cli
