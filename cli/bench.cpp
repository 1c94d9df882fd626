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
        throw std::invalid_argument("bench: --filter '" + o.filter + "' matches no workload");
    }
    const std::vector<bench::impl> impls = bench::implementations(o);
    const std::vector<bench::run_data> runs = bench::collect(o, impls);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    report::machine_record m = report::read_machine_record(BLITZ_BUILD_FLAGS);
    report::fill_io_backend(m);
    const bench::report_input in{o, impls, runs, m, secs};
    const std::string dir =
        !o.out_dir.empty() ? o.out_dir : "results/" + m.id + (o.quick ? "/quick" : "");
    const bool write = o.out_dir != "-";
    if (write) fs::create_directories(dir);
    const std::string md = bench::render_markdown(in, write && o.plots ? dir : "");

    std::cout << "\nBenchmarks (" << o.repetitions
              << " interleaved repetitions; ratio = blitz time / peer time, median of pairs)\n\n";
    table summary(bench::summary_header(in));
    for (auto& row : bench::summary_rows(in)) summary.add(row);
    summary.print(std::cout);
    if (write) {
        std::ofstream(dir + "/bench.md") << md;
        std::ofstream js(dir + "/bench.json");
        bench::write_json(js, in);
        if (!m.topology_xml.empty() && !fs::exists(dir + "/topology.xml")) {
            std::ofstream(dir + "/topology.xml") << m.topology_xml;
        }
        const bool plots = md.find("](plots/") != std::string::npos;
        std::cout << "\nwrote " << dir << "/bench.md and bench.json" << (plots ? " and plots" : "")
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

int bench_main(int argc, char** argv) {
    bench_options o;
    std::ostringstream cmd;
    cmd << "blitz";
    for (int i = 0; i < argc; ++i) cmd << ' ' << argv[i];
    o.command = cmd.str();
    bool peers_given = false;
    bool timeout_given = false;
    std::vector<unsigned> workers;
    auto count = [](const std::string& flag, const std::string& v) {
        std::size_t used = 0;
        unsigned long n = 0;
        try {
            n = std::stoul(v, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != v.size() || n == 0 || n > 4096) {
            throw std::invalid_argument(flag + " expects a positive integer, got '" + v + "'");
        }
        return static_cast<unsigned>(n);
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--filter") {
            o.filter = value();
            (void)std::regex(o.filter);  // a bad expression fails here, before any run
        } else if (a == "--peers") {
            peers_given = true;
            const std::string list = value();
            std::istringstream in(list);
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
                    throw std::invalid_argument(
                        "--peers: unknown peer '" + p +
                        "' (known: tokio, go, asio, tbb, noprobes, spin20, spin100, all, none)");
                }
                o.peers.push_back(p);
            }
        } else if (a == "--workers") {
            std::istringstream in(value());
            for (std::string w; std::getline(in, w, ',');) workers.push_back(count("--workers", w));
        } else if (a == "--pin") {
            o.topology.policy = parse_placement_policy(value());
            if (o.topology.policy == placement_policy::list)
                throw std::invalid_argument("--pin: list needs PUs; use compact or scatter");
        } else if (a == "--repetitions") {
            o.repetitions = count(a, value());
        } else if (a == "--timeout") {
            o.timeout_s = count(a, value());
            timeout_given = true;
        } else if (a == "--out") {
            o.out_dir = value();
        } else if (a == "--baseline") {
            o.baseline = value();
            if (!fs::exists(o.baseline))
                throw std::invalid_argument("--baseline: no such file '" + o.baseline + "'");
        } else if (a == "--no-plots") {
            o.plots = false;
        } else if (a == "--quick") {
            o.quick = true;
            o.repetitions = 3;
            if (workers.empty()) workers = {4};
        } else if (a == "--smoke") {
            // Every blitz workload once, no peers, nothing written: catches bit-rot in seconds.
            o.repetitions = 1;
            o.smoke = true;
            o.out_dir = "-";
            peers_given = true;
            o.peers.clear();
            if (workers.empty()) workers = {2};
        } else if (a == "-h" || a == "--help") {
            std::cout
                << "usage: blitz bench [--filter RE] [--peers LIST] [--workers N[,N...]] [--pin "
                   "POLICY]\n"
                   "                   [--repetitions N] [--quick] [--smoke] [--out DIR] "
                   "[--no-plots] [--timeout S]\n"
                   "                   [--baseline PATH]\n"
                   "  --peers      tokio,go,asio,tbb,noprobes (default: all), or none; spin20 and\n"
                   "               spin100 add blitz spinning that many us before parking\n"
                   "  --workers    worker counts (default: 4 and one per hardware thread)\n"
                   "  --pin        placement of blitz's workers: none (default), compact, scatter\n"
                   "  --quick      3 repetitions, 4 workers (make run); writes "
                   "results/<machine>/quick/\n"
                   "  --smoke      every blitz workload once at a hundredth of its size, no peers, "
                   "no files\n"
                   "  --out        report directory (default results/<machine-id>; - writes "
                   "nothing)\n"
                   "  --timeout    seconds one child process may take before it is killed (default "
                   "60;\n"
                   "               300 with --smoke (sizes shrunk a hundredfold), a hang guard)\n"
                   "  --baseline   another build's blitz-runner (or blitz binary), run as peer\n"
                   "               blitz-baseline in the same interleaved run (before/after)\n";
            return 0;
        } else {
            throw std::invalid_argument("bench: unknown argument '" + a +
                                        "' (see blitz bench --help)");
        }
    }
    if (!peers_given) o.peers = known_peers();
    // A smoke run checks that each workload completes, not how fast: the runner shrinks every
    // workload to about a hundredth (--smoke; under TSan on a loaded 2-core machine full-size
    // fib_30 alone took 17 s and was once killed at 60 s). The timeout is only a hang guard,
    // far above the seconds a smoke workload takes (an explicit --timeout still wins).
    if (o.smoke && !timeout_given) o.timeout_s = 300;
    if (workers.empty()) {
        workers.push_back(4);
        const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
        if (hw != 4) workers.push_back(hw);
    }
    o.workers = workers;
    return run_bench(o);
}

}  // namespace blitz::cli
