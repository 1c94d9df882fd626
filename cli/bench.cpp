// SPDX-License-Identifier: MIT
// `blitz bench`: runs blitz and each peer on the same workloads, interleaved (for every
// repetition, one child process per implementation in turn: A B C A B C ...), keeps every
// repetition and writes the report: bench.json (everything), bench.md (tables, targets, machine
// record, placement) and PNG plots drawn by gnuplot when it is installed. The work is done by
// the bench/report library (collect: the runs; writers: the report); this file parses the
// command line and puts them together.

#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "args.hpp"
#include "bench_workloads.hpp"
#include "blitz/topology.hpp"
#include "collect.hpp"
#include "machine_record.hpp"
#include "machine_record_io.hpp"
#include "table.hpp"
#include "writers.hpp"

namespace blitz::cli {
namespace fs = std::filesystem;
using bench::extra_peers;
using bench::known_peers;

int run_bench(const bench_options& o) {
    const auto started = std::chrono::steady_clock::now();
    const std::regex re(o.filter);
    if (std::none_of(bench::workloads().begin(), bench::workloads().end(),
                     [&](const bench::workload& w) { return std::regex_search(w.name, re); })) {
        throw usage_error("bench: --filter '" + o.filter +
                          "' matches no workload (blitz bench --list shows them)");
    }
    // The machine as the run starts (its date and load average are the start's).
    report::machine_record m = report::read_machine_record(BLITZ_BUILD_FLAGS);
    report::fill_io_backend(m);
    if (std::find(o.peers.begin(), o.peers.end(), "busy") != o.peers.end()) {
        m.io_modes = "shared; busy (the blitz-busy peer)";
    }
    const std::vector<bench::impl> impls = bench::implementations(o);
    const std::vector<bench::run_data> runs = bench::collect(o, impls);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    const bench::report_input in{o, impls, runs, m, secs};
    const std::string dir =
        !o.out_dir.empty() ? o.out_dir : "results/" + m.id + (o.quick ? "/quick" : "");
    // --out - and --format json own stdout (files then only with an explicit --out DIR);
    // --smoke writes nothing.
    const bool md_stdout = o.out_dir == "-";
    const bool write = !md_stdout && !o.smoke && !(o.json_stdout && o.out_dir.empty());
    std::ostream& human = md_stdout || o.json_stdout ? std::cerr : std::cout;
    if (write) fs::create_directories(dir);
    const std::string md = bench::render_markdown(in, write && o.plots ? dir : "");
    if (md_stdout) std::cout << md;
    if (o.json_stdout) bench::write_json(std::cout, in);

    human << "\nBenchmarks (" << o.repetitions
          << " interleaved repetitions; ratio = blitz time / peer time, median of pairs)\n\n";
    table summary(bench::summary_header(in));
    for (auto& row : bench::summary_rows(in)) summary.add(row);
    summary.print(human);
    if (write) {
        std::ofstream(dir + "/bench.md") << md;
        std::ofstream js(dir + "/bench.json");
        bench::write_json(js, in);
        if (!m.topology_xml.empty() && !fs::exists(dir + "/topology.xml")) {
            std::ofstream(dir + "/topology.xml") << m.topology_xml;
        }
        const bool plots = md.find("](plots/") != std::string::npos;
        human << "\nwrote " << dir << "/bench.md and bench.json" << (plots ? " and plots" : "")
              << "\n";
    }
    bool blitz_failed = false;
    for (const auto& d : runs) {
        for (const auto& n : d.names) {
            const bench::series& b = d.s.at({n, "blitz"});
            if (b.seen) continue;
            blitz_failed = true;
            std::cerr << "bench: blitz " << n << " (" << d.workers
                      << " workers) failed: " << b.not_run << "\n";
        }
    }
    return blitz_failed ? 1 : 0;
}

namespace {

void bench_help() {
    std::cout
        << "usage: blitz bench [--filter RE] [--peers LIST] [--workers N[,N...]] [--pin POLICY]\n"
           "                   [--repetitions N] [--quick] [--smoke] [--out DIR|-] [--format "
           "text|json]\n"
           "                   [--no-plots] [--timeout S] [--baseline PATH] [--list]\n"
           "  --filter       only workloads matching the regular expression (see --list)\n"
           "  --list         the workloads: name, kind and operations per repetition\n"
           "  --peers        tokio,go,asio,tbb,noprobes,noinspect,ct,tokio-ct (default: all),\n"
           "                 or none; noprobes and noinspect are blitz with its probes, or its\n"
           "                 stall detector, histograms and dump records, compiled out; ct and\n"
           "                 tokio-ct are blitz's and Tokio's current-thread runtimes (the\n"
           "                 rows where Tokio's benchmarks use one; tokio-ct against ct);\n"
           "                 spin10, spin20, spin50 and spin100 add blitz with a fixed park_spin\n"
           "                 of that many us (the last searcher spins before parking);\n"
           "                 aspin10 ... aspin100 with the adaptive spin capped there;\n"
           "                 nospin with park_spin 0; busy\n"
           "                 adds blitz in busy mode (io_mode busy; needs --pin)\n"
           "  --workers      worker counts (default: 4 and one per CPU this process may use)\n"
           "  --pin          placement of blitz's workers: none (default), compact, scatter\n"
           "  --repetitions  timed repetitions per implementation (default 5)\n"
           "  --quick        3 repetitions, 4 workers (make run); writes results/<machine>/quick/\n"
           "  --smoke        every blitz workload once at a hundredth of its size, no peers, no "
           "files\n"
           "  --out DIR      report directory (default results/<machine-id>); - prints bench.md "
           "on\n"
           "                 stdout and writes no files\n"
           "  --format json  bench.json on stdout (the summary goes to stderr)\n"
           "  --timeout S    seconds one child process may take before it is killed (default "
           "60;\n"
           "                 300 with --smoke (sizes shrunk a hundredfold), a hang guard)\n"
           "  --baseline     another build's blitz-runner (or blitz binary), run as peer\n"
           "                 blitz-baseline in the same interleaved run (before/after)\n"
           "exit status: 0 every blitz row ran, 1 a blitz row failed, 2 a wrong command line\n";
}

void list_workloads() {
    for (const bench::workload& w : bench::workloads()) {
        std::cout << w.name << "\t" << bench::kind_name(w.group) << "\t" << w.ops << "\n";
    }
}

}  // namespace

int bench_main(int argc, char** argv) {
    bench_options o;
    args a("blitz bench", argc, argv, 1);
    o.command = a.command_line();
    bool peers_given = false;
    bool timeout_given = false;
    std::string format = "text";
    std::vector<unsigned> workers;
    while (!a.done()) {
        const std::string f = a.next();
        if (f == "-h" || f == "--help") {
            bench_help();
            return 0;
        }
        if (f == "--list") {
            a.no_value();
            list_workloads();
            return 0;
        }
        if (f == "--filter") {
            o.filter = a.value();
            try {
                (void)std::regex(o.filter);  // a bad expression fails here, before any run
            } catch (const std::regex_error&) {
                throw usage_error("bench: --filter: not a regular expression: '" + o.filter + "'");
            }
        } else if (f == "--peers") {
            peers_given = true;
            std::istringstream in(a.value());
            for (std::string p; std::getline(in, p, ',');) {
                if (p == "none" || p.empty()) continue;
                if (p == "all") {
                    o.peers = known_peers();
                    continue;
                }
                if (std::find(known_peers().begin(), known_peers().end(), p) ==
                        known_peers().end() &&
                    std::find(extra_peers().begin(), extra_peers().end(), p) ==
                        extra_peers().end()) {
                    throw usage_error("bench: --peers: unknown peer '" + p +
                                      "' (known: tokio, go, asio, tbb, noprobes, noinspect, ct, "
                                      "tokio-ct, spin10, spin20, "
                                      "spin50, spin100, aspin10, aspin20, aspin50, aspin100, "
                                      "nospin, busy, all, none)");
                }
                o.peers.push_back(p);
            }
        } else if (f == "--workers") {
            workers = a.counts(config::max_workers);
        } else if (f == "--pin") {
            o.topology.policy = parse_placement_policy(a.value());
            if (o.topology.policy == placement_policy::list)
                throw usage_error("bench: --pin: list needs PUs; use compact or scatter");
        } else if (f == "--repetitions") {
            o.repetitions = static_cast<unsigned>(a.count(100'000));
        } else if (f == "--timeout") {
            o.timeout_s = static_cast<unsigned>(a.count(86'400));
            timeout_given = true;
        } else if (f == "--out") {
            o.out_dir = a.value();
            check_output_dir("--out", o.out_dir);
        } else if (f == "--format") {
            format = a.value();
            if (format != "text" && format != "json") {
                throw usage_error("bench: --format takes text or json, got '" + format + "'");
            }
        } else if (f == "--baseline") {
            o.baseline = a.value();
            if (!fs::exists(o.baseline))
                throw usage_error("bench: --baseline: no such file '" + o.baseline + "'");
        } else if (f == "--no-plots") {
            a.no_value();
            o.plots = false;
        } else if (f == "--quick") {
            a.no_value();
            o.quick = true;
            o.repetitions = 3;
            if (workers.empty()) workers = {4};
        } else if (f == "--smoke") {
            // Every blitz workload once, no peers, nothing written: catches bit-rot in seconds.
            a.no_value();
            o.repetitions = 1;
            o.smoke = true;
            peers_given = true;
            o.peers.clear();
            if (workers.empty()) workers = {2};
        } else {
            a.unknown();
        }
    }
    o.json_stdout = format == "json";
    if (o.json_stdout && o.out_dir == "-") {
        throw usage_error("bench: only one of --format json and --out - can use stdout");
    }
    if (!peers_given) o.peers = known_peers();
    // A smoke run checks that each workload completes, not how fast: the runner shrinks every
    // workload to about a hundredth (--smoke; under TSan on a loaded 2-core machine full-size
    // fib_30 alone took 17 s and was once killed at 60 s). The timeout is only a hang guard,
    // far above the seconds a smoke workload takes (an explicit --timeout still wins).
    if (o.smoke && !timeout_given) o.timeout_s = 300;
    if (workers.empty()) {
        workers.push_back(4);
        const unsigned hw = read_cpu_budget().count;  // the affinity mask and cgroup quota
        if (hw != 4) workers.push_back(hw);
    }
    o.workers = workers;
    return run_bench(o);
}

}  // namespace blitz::cli
