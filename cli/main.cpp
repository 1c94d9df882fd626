// SPDX-License-Identifier: MIT
// The blitz binary: the demo, the benchmark report and the conformance suite.

#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include "bench.hpp"
#include "blitz/topology.hpp"
#include "blitz/version.hpp"
#include "demo.hpp"
#include "harness.hpp"
#include "machine_record.hpp"
#include "runner.hpp"
#include "topo.hpp"

namespace {

void usage(std::ostream& os) {
    os << "usage: blitz <demo|bench|conformance|topo> [options]    blitz --version\n"
          "  demo          fan-out of 1,000,000 tasks and a chain of 100,000 spawns, then the\n"
          "                runtime's counters (the default when only options are given)\n"
          "  bench         the benchmark report: blitz and its peers (Tokio, Go, Asio, oneTBB)\n"
          "                interleaved; writes results/<machine>/bench.{md,json} and plots\n"
          "                (its own options: blitz bench --help)\n"
          "  conformance   invariant checkers with their negative controls; writes\n"
          "                results/<machine>/conformance.{md,json}; exit 1 on any failure\n"
          "  topo          the machine (or --topology) and the worker -> PU -> core -> node map\n"
          "options:\n"
          "  --quick              smaller runs (demo, conformance)\n"
          "  --full               conformance: the full suite\n"
          "  --workers N|LIST     worker threads; conformance takes a list such as 1,2,4,8,16\n"
          "  --fanout N --chain N demo sizes\n"
          "  --seed N             conformance seed (same seed and config, same decisions)\n"
          "  --filter ID...       conformance: only these invariant ids\n"
          "  --out DIR            conformance: where to write the tables\n"
          "  --hang-limit S       conformance: a run without progress for S s is a hang\n"
          "                       (default 30 with --quick, 120 with --full)\n"
          "  --max-hangs N        conformance: stop after N hangs outside negative controls\n"
          "                       (default: never; scripts/mutate.py passes 1)\n"
          "  --hang-selftest      conformance: run only H0, which hangs on purpose\n"
          "placement (demo, topo; conformance: --policy takes a list of passes such as\n"
          "none,compact (--full's default) and --topology adds shapes for the N checkers):\n"
          "  --topology T         hwloc synthetic string (\"pack:2 numa:2 core:8 pu:2\"), *.xml\n"
          "                       export or *.synth file; default: this machine\n"
          "  --policy P           none|compact|scatter|list (topo defaults to compact)\n"
          "  --pus LIST           policy list: OS PU numbers, one per worker (0,2,4)\n"
          "  --one-pu-per-core    compact/scatter skip SMT siblings\n"
          "  --numa-stealing      thieves try their own node first\n"
          "  --best-effort        a worker that cannot bind runs unbound instead of failing\n";
}

unsigned long parse_count(const std::string& flag, const std::string& v) {
    try {
        std::size_t used = 0;
        unsigned long n = std::stoul(v, &used);
        if (used == v.size() && n > 0) return n;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument(flag + " expects a positive integer, got '" + v + "'");
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 1) {  // as git and cargo do: the usage, not a run
            usage(std::cout);
            return 0;
        }
        if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
            std::cout << "blitz " << BLITZ_VERSION_STRING << "\n";
            return 0;
        }
        // The benchmark report and its runner take their own options.
        if (argc > 1 && std::strcmp(argv[1], "bench") == 0)
            return blitz::cli::bench_main(argc - 1, argv + 1);
        if (argc > 1 && std::strcmp(argv[1], "bench-run") == 0)
            return blitz::bench::runner_main(argc - 1, argv + 1);
        // A checker's child process (conformance/checkers_io.cpp runs some checks in a fresh
        // process: a seccomp filter, SIGPIPE at its default action).
        if (argc > 1 && std::strcmp(argv[1], "__conformance-child") == 0)
            return blitz::conformance::run_child(std::vector<std::string>(argv + 2, argv + argc));
        blitz::cli::demo_options demo;
        blitz::conformance::harness_options conf;
        blitz::cli::topo_options topo;
        bool policy_given = false;
        std::string policy_arg;
        std::string mode = "demo";
        std::string workers_arg;
        bool out_given = false;
        std::ostringstream cmd;
        cmd << "blitz";
        for (int i = 1; i < argc; ++i) cmd << ' ' << argv[i];
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
                return argv[++i];
            };
            if (a == "demo" || a == "conformance" || a == "topo") {
                mode = a;
            } else if (a == "--quick") {
                demo.fanout = 10'000;
                demo.chain = 1'000;
                conf.quick = true;
            } else if (a == "--full") {
                conf.quick = false;
            } else if (a == "--workers") {
                workers_arg = value();
            } else if (a == "--fanout") {
                demo.fanout = parse_count(a, value());
            } else if (a == "--chain") {
                demo.chain = parse_count(a, value());
            } else if (a == "--seed") {
                conf.seed = parse_count(a, value());
            } else if (a == "--out") {
                conf.out_dir = value();
                out_given = true;
            } else if (a == "--hang-limit") {
                conf.hang_limit_s = static_cast<unsigned>(parse_count(a, value()));
            } else if (a == "--max-hangs") {
                conf.max_hangs = static_cast<unsigned>(parse_count(a, value()));
            } else if (a == "--hang-selftest") {
                conf.hang_selftest = true;
            } else if (a == "--filter") {
                while (i + 1 < argc && argv[i + 1][0] != '-') conf.filter.push_back(argv[++i]);
                if (conf.filter.empty())
                    throw std::invalid_argument("--filter needs invariant ids");
            } else if (a == "--topology") {
                topo.topology.source = value();
                conf.topologies.push_back(topo.topology.source);
            } else if (a == "--policy") {
                policy_arg = value();
                policy_given = true;
            } else if (a == "--pus") {
                topo.topology.pus = blitz::cli::parse_pu_list(a, value());
            } else if (a == "--one-pu-per-core") {
                topo.topology.one_pu_per_core = true;
            } else if (a == "--numa-stealing") {
                topo.topology.numa_stealing = true;
            } else if (a == "--best-effort") {
                topo.topology.best_effort = true;
            } else if (a == "-h" || a == "--help" || a == "help") {
                usage(std::cout);
                return 0;
            } else {
                std::cerr << "blitz: unknown argument '" << a << "'\n";
                usage(std::cerr);
                return 2;
            }
        }
        if (!workers_arg.empty()) {
            conf.workers.clear();
            std::istringstream in(workers_arg);
            for (std::string w; std::getline(in, w, ',');) {
                conf.workers.push_back(static_cast<unsigned>(parse_count("--workers", w)));
            }
            demo.workers = conf.workers.front();
        }
        if (workers_arg.empty() && !conf.quick) conf.workers = {1, 2, 4, 8, 16};
        if (policy_given && mode == "conformance") {
            conf.policies.clear();
            std::istringstream in(policy_arg);
            for (std::string p; std::getline(in, p, ',');) {
                conf.policies.push_back(blitz::parse_placement_policy(p));
            }
        } else if (policy_given) {
            topo.topology.policy = blitz::parse_placement_policy(policy_arg);
        }
        if (!policy_given && !conf.quick) {
            conf.policies = {blitz::placement_policy::none, blitz::placement_policy::compact};
        }
        if (!topo.topology.pus.empty() && !policy_given) {
            topo.topology.policy = blitz::placement_policy::list;
            policy_given = true;
        }
        if (mode == "topo") {
            if (!policy_given) topo.topology.policy = blitz::placement_policy::compact;
            if (!workers_arg.empty()) topo.workers = conf.workers.front();
            return blitz::cli::run_topo(topo);
        }
        demo.topology = topo.topology;
        if (mode == "conformance") {
            if (!out_given) conf.out_dir = "results/" + blitz::report::machine_id();
            conf.command = cmd.str();
            return blitz::conformance::run_harness(conf);
        }
        return blitz::cli::run_demo(demo);
    } catch (const std::exception& e) {
        std::cerr << "blitz: " << e.what() << "\n";
        return 2;
    }
}
