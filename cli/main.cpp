// SPDX-License-Identifier: MIT
// The blitz binary: the demo, the benchmark report, the conformance suite, the topology map and
// the comparison of two reports. Each subcommand reads its own options (cli/args.hpp) and has
// its own --help; exit statuses are cli::exit_status.

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include "args.hpp"
#include "bench.hpp"
#include "blitz/config.hpp"
#include "blitz/topology.hpp"
#include "blitz/version.hpp"
#include "checker.hpp"
#include "compare.hpp"
#include "demo.hpp"
#include "harness.hpp"
#include "machine_record.hpp"
#include "report_page.hpp"
#include "runner.hpp"
#include "stress.hpp"
#include "top.hpp"
#include "topo.hpp"

namespace {

using blitz::cli::args;
using blitz::cli::usage_error;

const char* const exit_codes =
    "exit status: 0 passed, 1 a check failed, 2 a wrong command line (nothing ran), 3 a run "
    "hung\n";

void usage(std::ostream& os) {
    os << "usage: blitz <command> [options]          blitz <command> --help\n"
          "commands:\n"
          "  demo          fan-out of 1,000,000 tasks and a chain of 100,000 spawns, then the\n"
          "                runtime's counters (the default when only options are given)\n"
          "  conformance   every invariant checker with its negative control; writes\n"
          "                results/<machine>/conformance.{md,json}\n"
          "  bench         blitz and its peers (Tokio, Go, Asio, oneTBB) on the same workloads,\n"
          "                interleaved; writes results/<machine>/bench.{md,json} and plots\n"
          "  compare       per-row ratios of two bench.json reports, with a significance test\n"
          "  report        the results folder's tables and plots as one static HTML page\n"
          "  stress        randomized mixed workloads with exactly-once oracles, for a time or a\n"
          "                number of rounds, on runtimes built and shut down again and again\n"
          "  topo          the machine (or a synthetic topology) and the worker -> PU map\n"
          "  top           a live view of a running blitz program (its inspect socket)\n"
          "  --version     the version\n"
          "Options take `--flag value` or `--flag=value`; `-` as an output means stdout.\n"
       << exit_codes;
}

const char* const placement_help =
    "placement:\n"
    "  --topology T         hwloc synthetic string (\"pack:2 numa:2 core:8 pu:2\"), *.xml\n"
    "                       export or *.synth file; default: this machine\n"
    "  --policy P           none|compact|scatter|list\n"
    "  --pus LIST           policy list: OS PU numbers, one per worker (0,2,4)\n"
    "  --one-pu-per-core    compact/scatter skip SMT siblings\n"
    "  --numa-stealing      thieves try their own node first\n"
    "  --best-effort        a worker that cannot bind runs unbound instead of failing\n";

// The placement options demo and topo share. `f` is the flag just read; false if it is not one.
struct placement_args {
    blitz::topology_options t;
    bool policy_given = false;

    bool take(const std::string& f, args& a) {
        if (f == "--topology") {
            t.source = a.value();
        } else if (f == "--policy") {
            t.policy = blitz::parse_placement_policy(a.value());
            policy_given = true;
        } else if (f == "--pus") {
            t.pus = blitz::cli::parse_pu_list(f, a.value());
        } else if (f == "--one-pu-per-core") {
            a.no_value();
            t.one_pu_per_core = true;
        } else if (f == "--numa-stealing") {
            a.no_value();
            t.numa_stealing = true;
        } else if (f == "--best-effort") {
            a.no_value();
            t.best_effort = true;
        } else {
            return false;
        }
        return true;
    }
    // --pus alone implies policy list.
    void finish(blitz::placement_policy fallback) {
        if (!policy_given) t.policy = t.pus.empty() ? fallback : blitz::placement_policy::list;
    }
};

bool is_help(const std::string& f) { return f == "-h" || f == "--help"; }

int demo_main(args& a) {
    blitz::cli::demo_options o;
    placement_args pl;
    while (!a.done()) {
        const std::string f = a.next();
        if (is_help(f)) {
            std::cout << "usage: blitz demo [--quick] [--workers N] [--fanout N] [--chain N] "
                         "[placement]\n"
                         "  --quick      a fan-out of 10,000 and a chain of 1,000\n"
                         "  --workers    worker threads (default: one per hardware thread)\n"
                         "  --fanout N   tasks in the fan-out (default 1,000,000)\n"
                         "  --chain N    spawns in the chain (default 100,000)\n"
                      << placement_help << exit_codes;
            return 0;
        }
        if (f == "--quick") {
            a.no_value();
            o.fanout = 10'000;
            o.chain = 1'000;
        } else if (f == "--workers") {
            o.workers = static_cast<unsigned>(a.count(blitz::config::max_workers));
        } else if (f == "--fanout") {
            o.fanout = a.count();
        } else if (f == "--chain") {
            o.chain = a.count();
        } else if (!pl.take(f, a)) {
            a.unknown();
        }
    }
    pl.finish(blitz::placement_policy::none);
    o.topology = pl.t;
    return blitz::cli::run_demo(o);
}

int topo_main(args& a) {
    blitz::cli::topo_options o;
    placement_args pl;
    while (!a.done()) {
        const std::string f = a.next();
        if (is_help(f)) {
            std::cout << "usage: blitz topo [--workers N] [placement]     blitz topo --machine-id\n"
                         "  --workers     workers to place (default: one per eligible PU)\n"
                         "  --machine-id  print this machine's short id (the results/ folder)\n"
                         "  --io-mode M   shared (default) or busy: the runtime started to show\n"
                         "                the placement runs in that io_mode\n"
                         "  --sqpoll-cpu N  an io_uring submission-polling thread on OS CPU N\n"
                      << placement_help << "  (topo's --policy defaults to compact)\n"
                      << exit_codes;
            return 0;
        }
        if (f == "--machine-id") {
            a.no_value();
            std::cout << blitz::report::machine_id() << "\n";
            return 0;
        }
        if (f == "--workers") {
            o.workers = static_cast<unsigned>(a.count(4096));
        } else if (f == "--io-mode") {
            o.io_mode = blitz::parse_io_mode(a.value());
        } else if (f == "--sqpoll-cpu") {
            const std::string v = a.value();
            if (v.empty() || v.size() > 7 ||
                v.find_first_not_of("0123456789") != std::string::npos) {
                throw usage_error("topo: --sqpoll-cpu: '" + v + "' is not an OS CPU number");
            }
            o.sqpoll_cpu = std::stoi(v);
        } else if (!pl.take(f, a)) {
            a.unknown();
        }
    }
    pl.finish(blitz::placement_policy::compact);
    o.topology = pl.t;
    return blitz::cli::run_topo(o);
}

void list_checkers() {
    for (const auto& c : blitz::conformance::all_checkers()) {
        // "(+ct)": it also runs on a current-thread runtime (issue 47).
        std::cout << c.id << "\t" << c.statement << (c.current_thread ? " (+ct)" : "") << "\n";
    }
}

int conformance_main(args& a) {
    blitz::conformance::harness_options o;
    bool workers_given = false, policy_given = false, out_given = false, io_mode_given = false;
    std::string format = "text";
    while (!a.done()) {
        const std::string f = a.next();
        if (is_help(f)) {
            std::cout
                << "usage: blitz conformance [--quick|--full] [--workers LIST] [--filter ID...]\n"
                   "                         [--out DIR|-] [--junit FILE|-] [--format "
                   "text|json] [--list] ...\n"
                   "  --quick          smaller runs at 1, 2 and 4 workers (the default)\n"
                   "  --full           the full suite: 1, 2, 4, 8, 16 workers, unpinned and "
                   "compact\n"
                   "  --workers LIST   worker counts, such as 1,2,4,8,16\n"
                   "  --filter ID...   only these invariant ids (see --list)\n"
                   "  --list           the checkers: id and property, one per line\n"
                   "  --seed N         the seed (same seed and config, same decisions)\n"
                   "  --out DIR        where conformance.{md,json} go (default\n"
                   "                   results/<machine>); - prints the Markdown on stdout\n"
                   "  --junit FILE     JUnit XML: one test case per checker and configuration, "
                   "the\n"
                   "                   first violation as the failure message (- for stdout)\n"
                   "  --format json    the JSON report on stdout (the table goes to stderr)\n"
                   "  --policy LIST    placement passes, such as none,compact (--full's "
                   "default)\n"
                   "  --io-mode LIST   io_mode passes of the pinned configurations: shared, "
                   "busy\n"
                   "                   or shared,busy (--full's default; busy needs pinning)\n"
                   "  --topology T     another shape for the N checkers (repeatable)\n"
                   "  --place-on T     the pinned passes place workers on topology T instead\n"
                   "                   of this machine (nothing bound; no busy pass)\n"
                   "  --park-spin US   every runtime's config::park_spin, in us (1-1000), fixed:\n"
                   "                   the last searcher spins that long before every park\n"
                   "                   (park_spin_adaptive off; default: no spin)\n"
                   "  --hang-limit S   a run without progress for S s is a hang (default 30 "
                   "with\n"
                   "                   --quick, 120 with --full)\n"
                   "  --max-hangs N    stop after N hangs outside negative controls\n"
                   "  --hang-selftest  run only H0, which hangs on purpose\n"
                   "  --no-current-thread  skip the current-thread pass: the checkers marked\n"
                   "                   (+ct) in --list run once more, with their controls, on a\n"
                   "                   current-thread runtime (W=1), whenever the unpinned pass\n"
                   "                   runs\n"
                << exit_codes;
            return 0;
        }
        if (f == "--quick") {
            a.no_value();
            o.quick = true;
        } else if (f == "--full") {
            a.no_value();
            o.quick = false;
        } else if (f == "--list") {
            a.no_value();
            list_checkers();
            return 0;
        } else if (f == "--workers") {
            o.workers = a.counts(blitz::config::max_workers);
            workers_given = true;
        } else if (f == "--seed") {
            o.seed = a.count(~0ul >> 1);
        } else if (f == "--out") {
            o.out_dir = a.value();
            out_given = true;
        } else if (f == "--junit") {
            o.junit = a.value();
        } else if (f == "--format") {
            format = a.value();
            if (format != "text" && format != "json") {
                throw usage_error("conformance: --format takes text or json, got '" + format + "'");
            }
        } else if (f == "--hang-limit") {
            o.hang_limit_s = static_cast<unsigned>(a.count(86'400));
        } else if (f == "--max-hangs") {
            o.max_hangs = static_cast<unsigned>(a.count(1'000'000));
        } else if (f == "--hang-selftest") {
            a.no_value();
            o.hang_selftest = true;
        } else if (f == "--no-current-thread") {
            a.no_value();
            o.current_thread = false;
        } else if (f == "--filter") {
            // --filter O4 O2, --filter O4,O2 or --filter=O4,O2.
            auto add = [&](const std::string& v) {
                std::istringstream in(v);
                for (std::string id; std::getline(in, id, ',');) {
                    if (!id.empty()) o.filter.push_back(id);
                }
            };
            if (a.has_inline_value()) {
                add(a.value());
            } else {
                while (a.peek_positional()) add(a.value());
            }
            if (o.filter.empty()) throw usage_error("conformance: --filter needs ids");
        } else if (f == "--topology") {
            o.topologies.push_back(a.value());
        } else if (f == "--place-on") {
            o.place_on = a.value();
        } else if (f == "--park-spin") {
            o.park_spin = std::chrono::microseconds(a.count(1'000));
        } else if (f == "--policy") {
            o.policies.clear();
            std::istringstream in(a.value());
            for (std::string p; std::getline(in, p, ',');) {
                o.policies.push_back(blitz::parse_placement_policy(p));
            }
            policy_given = true;
        } else if (f == "--io-mode") {
            o.io_modes.clear();
            std::istringstream in(a.value());
            for (std::string m; std::getline(in, m, ',');) {
                o.io_modes.push_back(blitz::parse_io_mode(m));
            }
            if (o.io_modes.empty()) throw usage_error("conformance: --io-mode needs a mode");
            io_mode_given = true;
        } else {
            a.unknown();
        }
    }
    // The ids must exist: a typo would otherwise run nothing and fail as an empty suite.
    for (const std::string& id : o.filter) {
        bool known = id == "H0";
        for (const auto& c : blitz::conformance::all_checkers()) known = known || c.id == id;
        if (!known) {
            throw usage_error("conformance: --filter: no checker '" + id +
                              "' (blitz conformance --list shows them)");
        }
    }
    if (!workers_given && !o.quick) o.workers = {1, 2, 4, 8, 16};
    if (!policy_given && !o.quick) {
        o.policies = {blitz::placement_policy::none, blitz::placement_policy::compact};
    }
    // --place-on is about the pinned passes: without --policy it runs a compact one alone.
    if (!policy_given && !o.place_on.empty()) o.policies = {blitz::placement_policy::compact};
    if (!io_mode_given && !o.quick) {
        o.io_modes = {blitz::io_mode_kind::shared, blitz::io_mode_kind::busy};
    }
    if (std::find(o.io_modes.begin(), o.io_modes.end(), blitz::io_mode_kind::busy) !=
            o.io_modes.end() &&
        std::find_if(o.policies.begin(), o.policies.end(), [](blitz::placement_policy p) {
            return p != blitz::placement_policy::none;
        }) == o.policies.end()) {
        throw usage_error(
            "conformance: --io-mode busy needs a pinned pass (--policy compact or scatter): "
            "busy workers must be pinned");
    }
    o.json_stdout = format == "json";
    const int claims = (o.json_stdout ? 1 : 0) + (o.junit == "-" ? 1 : 0) + (o.out_dir == "-");
    if (claims > 1) {
        throw usage_error(
            "conformance: only one of --format json, --junit - and --out - can use stdout");
    }
    // The default folder only when stdout is not already the report (as Google Benchmark's
    // --benchmark_format writes no file unless --benchmark_out names one).
    if (!out_given && claims == 0) o.out_dir = "results/" + blitz::report::machine_id();
    if (!o.out_dir.empty()) blitz::cli::check_output_dir("--out", o.out_dir);
    if (!o.junit.empty()) blitz::cli::check_output_file("--junit", o.junit);
    o.command = a.command_line();
    return blitz::conformance::run_harness(o);
}

int top_main(args& a) {
    blitz::cli::top_options o;
    while (!a.done()) {
        const std::string f = a.next();
        if (is_help(f)) {
            std::cout
                << "usage: blitz top --attach PID|PATH [--once] [--format F] [--interval MS]\n"
                   "       blitz top --demo [--once] ...\n"
                   "  --attach     a program's PID (its config::inspect_socket = \"auto\") or the\n"
                   "               socket path it set\n"
                   "  --demo       start a runtime with a small workload in this process and\n"
                   "               attach to it\n"
                   "  --once       one snapshot, then exit (default: refresh until interrupted;\n"
                   "               in place on a terminal, as blocks of lines otherwise)\n"
                   "  --format F   text (default), json (metrics and dump in one object a line)\n"
                   "               or openmetrics (the text format Prometheus scrapes)\n"
                   "  --interval MS  between refreshes (default 1000)\n"
                   "  --tasks N    rows in the oldest and busiest task tables (default 10)\n"
                << exit_codes;
            return 0;
        }
        if (f == "--attach") {
            o.attach = a.value();
        } else if (f == "--demo") {
            a.no_value();
            o.demo = true;
        } else if (f == "--once") {
            a.no_value();
            o.once = true;
        } else if (f == "--format") {
            o.format = a.value();
            if (o.format != "text" && o.format != "json" && o.format != "openmetrics")
                throw usage_error("top: --format: text, json or openmetrics; got '" + o.format +
                                  "'");
        } else if (f == "--interval") {
            o.interval_ms = static_cast<unsigned>(a.count(3'600'000));
            if (o.interval_ms == 0) throw usage_error("top: --interval: at least 1 ms");
        } else if (f == "--tasks") {
            o.tasks = static_cast<unsigned>(a.count(100000));
        } else {
            a.unknown();
        }
    }
    if (o.attach.empty() == !o.demo) {
        throw usage_error("top: give --attach PID|PATH (or --demo), not both");
    }
    try {
        return blitz::cli::run_top(o);
    } catch (const blitz::config_error&) {
        throw;
    } catch (const std::runtime_error& e) {
        std::cerr << "blitz top: " << e.what() << "\n";
        return blitz::cli::exit_failed;
    }
}

int dispatch(int argc, char** argv) {
    if (argc == 1) {  // as git and cargo do: the usage, not a run
        usage(std::cout);
        return 0;
    }
    const std::string first = argv[1];
    if (first == "--version" || first == "version" || first == "-V") {
        std::cout << "blitz " << BLITZ_VERSION_STRING << "\n";
        return 0;
    }
    if (is_help(first) || first == "help") {
        if (first == "help" && argc > 2) {  // `blitz help conformance`
            char help[] = "--help";
            char* sub[] = {argv[0], argv[2], help};
            return dispatch(3, sub);
        }
        usage(std::cout);
        return 0;
    }
    // Internal: the benchmark's runner and a checker's child process.
    if (first == "bench-run") return blitz::bench::runner_main(argc - 1, argv + 1);
    if (first == "__conformance-child") {
        return blitz::conformance::run_child(std::vector<std::string>(argv + 2, argv + argc));
    }
    if (first == "bench") return blitz::cli::bench_main(argc - 1, argv + 1);
    if (first == "compare") {
        args a("blitz compare", argc, argv, 2);
        return blitz::cli::compare_main(a);
    }
    if (first == "report") {
        args a("blitz report", argc, argv, 2);
        return blitz::cli::report_main(a);
    }
    if (first == "conformance") {
        args a("blitz conformance", argc, argv, 2);
        return conformance_main(a);
    }
    if (first == "stress") {
        args a("blitz stress", argc, argv, 2);
        return blitz::cli::stress_main(a);
    }
    if (first == "top") {
        args a("blitz top", argc, argv, 2);
        return top_main(a);
    }
    if (first == "topo") {
        args a("blitz topo", argc, argv, 2);
        return topo_main(a);
    }
    if (first == "demo") {
        args a("blitz demo", argc, argv, 2);
        return demo_main(a);
    }
    if (first.size() > 1 && first[0] == '-') {  // only options: the demo
        args a("blitz demo", argc, argv, 1);
        return demo_main(a);
    }
    throw usage_error("unknown command '" + first + "'");
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return dispatch(argc, argv);
    } catch (const usage_error& e) {
        std::cerr << "blitz: " << e.what() << "\n"
                  << "(blitz --help lists the commands; blitz <command> --help their options)\n";
        return blitz::cli::exit_usage;
    } catch (const blitz::config_error& e) {
        std::cerr << "blitz: " << e.what() << "\n";
        return blitz::cli::exit_usage;
    } catch (const std::invalid_argument& e) {
        std::cerr << "blitz: " << e.what() << "\n";
        return blitz::cli::exit_usage;
    } catch (const std::exception& e) {
        std::cerr << "blitz: " << e.what() << "\n";
        return blitz::cli::exit_failed;
    }
}
