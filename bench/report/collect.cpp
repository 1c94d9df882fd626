// SPDX-License-Identifier: MIT
#include "collect.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>

#include "bench_workloads.hpp"
#include "child.hpp"
#include "result_line.hpp"

namespace blitz::bench {
namespace fs = std::filesystem;

const std::vector<std::string>& known_peers() {
    // ct and tokio-ct: the current-thread column (issue 47), blitz's and Tokio's
    // current-thread runtimes on the rows where Tokio's benchmarks use one.
    static const std::vector<std::string> p = {"tokio",    "go",        "asio", "tbb",
                                               "noprobes", "noinspect", "ct",   "tokio-ct"};
    return p;
}

// Not in the default set: blitz with bounded spinning before parking (the parking experiment:
// fixed, adaptive, or none), and blitz in busy mode (config io_mode busy: idle workers spin and
// never park; needs --pin).
const std::vector<std::string>& extra_peers() {
    static const std::vector<std::string> p = {"spin10",  "spin20",  "spin50",  "spin100",
                                               "aspin10", "aspin20", "aspin50", "aspin100",
                                               "nospin",  "busy"};
    return p;
}

namespace {

std::string exe_dir() {
    std::error_code ec;
    const auto p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : p.parent_path().string();
}

}  // namespace

std::vector<impl> implementations(const bench_options& o) {
    const std::string here = exe_dir();
    const char* env = std::getenv("BLITZ_PEERS_DIR");
    const std::string peers = env ? env : here + "/../peers";
    std::vector<impl> v;
    // blitz-runner: the library users link (no negative controls compiled in), not this binary.
    v.push_back({"blitz", {here + "/blitz-runner", "--peer", "blitz"}, ""});
    if (!fs::exists(v.back().argv[0])) v.back().missing = "blitz-runner not built";
    // Every blitz build runs with the placement asked for (the peers place their own threads).
    auto pinned = [&](std::vector<std::string>& argv) {
        if (o.topology.policy == placement_policy::none) return;
        argv.push_back("--pin");
        argv.push_back(to_string(o.topology.policy));
    };
    pinned(v.back().argv);
    if (!o.baseline.empty()) {
        impl b{"blitz-baseline", {o.baseline}, ""};
        if (fs::path(o.baseline).filename() == "blitz") b.argv.push_back("bench-run");
        b.argv.insert(b.argv.end(), {"--peer", "blitz-baseline"});
        pinned(b.argv);
        v.push_back(std::move(b));
    }
    for (const auto& p : o.peers) {
        impl i{p, {}, ""};
        if (p == "tokio") i.argv = {peers + "/tokio/release/tokio-peer"};
        if (p == "tokio-ct") i.argv = {peers + "/tokio/release/tokio-peer", "--current-thread"};
        if (p == "ct") {
            // One worker, the runner's thread, whatever --workers says.
            i.name = "blitz-ct";
            i.argv = {here + "/blitz-runner", "--peer", i.name, "--flavor", "current_thread"};
        }
        if (p == "go") i.argv = {peers + "/go-peer"};
        if (p == "asio") i.argv = {peers + "/asio-peer"};
        if (p == "tbb") i.argv = {peers + "/tbb-peer"};
        // spinN: a fixed park_spin of N us; aspinN: the adaptive budget capped at N us;
        // nospin: park_spin 0 (whatever the default).
        if (p.rfind("spin", 0) == 0 || p.rfind("aspin", 0) == 0 || p == "nospin") {
            const bool fixed = p[0] == 's';
            i.name = "blitz-" + p;
            i.argv = {here + "/blitz-runner", "--peer", i.name, "--park-spin-us",
                      p == "nospin" ? "0" : p.substr(fixed ? 4 : 5)};
            if (fixed) i.argv.push_back("--park-spin-fixed");
            pinned(i.argv);
        }
        if (p == "busy") {
            i.name = "blitz-busy";
            i.argv = {here + "/blitz-runner", "--peer", i.name, "--io-mode", "busy"};
            pinned(i.argv);
            if (o.topology.policy == placement_policy::none) {
                i.missing = "busy mode needs pinned workers (--pin compact or scatter)";
            }
        }
        // Builds of blitz's own with something compiled out: probes, or inspection.
        if (p == "noprobes" || p == "noinspect") {
            i.name = "blitz-" + p;
            i.argv = {here + "/" + i.name, "--peer", i.name};
            pinned(i.argv);
        }
        if (i.missing.empty() && !fs::exists(i.argv[0])) {
            i.missing = p == "noprobes" || p == "noinspect"
                            ? "blitz-" + p + " not built (the release preset builds it)"
                            : i.argv[0] + " not built (run `make peers`)";
        }
        v.push_back(std::move(i));
    }
    return v;
}

bool run_data::is_latency(const std::string& w) const {
    auto it = kinds.find(w);
    return it != kinds.end() && it->second == "latency";
}

std::vector<run_data> collect(const bench_options& o, const std::vector<impl>& impls) {
    std::vector<run_data> runs;
    const std::regex re(o.filter);
    const auto timeout = std::chrono::seconds(o.timeout_s);
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    for (unsigned workers : o.workers) {
        run_data d;
        d.workers = workers;
        for (const auto& w : bench::workloads()) {
            if (!std::regex_search(w.name, re)) continue;
            d.names.push_back(w.name);
            d.kinds[w.name] = bench::kind_name(w.group);
            // Progress: on a terminal one line rewritten in place (workload and repetition); in a
            // log one line per workload, a dot per repetition.
            const std::string step =
                "bench: " + w.name + " (" + std::to_string(workers) + " workers)";
            if (!tty) std::cerr << step << std::flush;
            for (unsigned rep = 0; rep < o.repetitions; ++rep) {
                if (tty) {
                    std::cerr << "\r\033[K" << step << " repetition " << rep + 1 << "/"
                              << o.repetitions << std::flush;
                }
                for (const auto& i : impls) {
                    series& s = d.s[{w.name, i.name}];
                    if (!i.missing.empty()) {
                        s.not_run = i.missing;
                        continue;
                    }
                    if (!s.not_run.empty()) continue;
                    std::vector<std::string> argv = i.argv;
                    for (const std::string& a :
                         {std::string("--workers"), std::to_string(workers), std::string("--reps"),
                          std::string("1"), std::string("--filter"), "^" + w.name + "$"}) {
                        argv.push_back(a);
                    }
                    if (rep == 0 && !o.smoke) argv.push_back("--allocs");
                    if (o.smoke && i.name == "blitz") {
                        argv.push_back("--no-warmup");
                        argv.push_back("--smoke");  // a hundredth of each workload's size
                    }
                    const child_result c = run_child(argv, timeout);
                    if (c.timed_out) {
                        s.not_run =
                            "did not finish within " + std::to_string(o.timeout_s) + " s (killed)";
                        continue;
                    }
                    bool got = false;
                    std::istringstream lines(c.out);
                    for (std::string line; std::getline(lines, line);) {
                        auto m = parse_line(line);
                        if (!m || (*m)["workload"].s != w.name) continue;
                        got = true;
                        auto& j = *m;
                        if (j.count("not_run")) s.not_run = j["not_run"].s;
                        if (j.count("error")) s.not_run = "failed: " + j["error"].s;
                        if (!s.not_run.empty()) break;
                        s.seen = true;
                        s.version = j["version"].s;
                        s.ops = static_cast<long>(j["ops"].n);
                        if (j.count("placement")) s.placement = j["placement"].s;
                        s.reps.insert(s.reps.end(), j["reps_ns"].arr.begin(),
                                      j["reps_ns"].arr.end());
                        s.samples.insert(s.samples.end(), j["samples_ns"].arr.begin(),
                                         j["samples_ns"].arr.end());
                        if (j.count("allocs_per_op")) s.allocs = j["allocs_per_op"].n;
                        if (j.count("bytes_per_op")) s.bytes = j["bytes_per_op"].n;
                    }
                    if (!got) {
                        const bool ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
                        std::string why = ok ? "not implemented by this peer" : "exited abnormally";
                        if (!ok && !c.err.empty()) {
                            std::string last = c.err.substr(0, 300);
                            std::replace(last.begin(), last.end(), '\n', ' ');
                            why += ": " + last;
                        }
                        s.not_run = why;
                    }
                }
                if (!tty) std::cerr << '.' << std::flush;
            }
            if (!tty) std::cerr << '\n';
        }
        runs.push_back(std::move(d));
    }
    if (tty) std::cerr << "\r\033[K" << std::flush;
    return runs;
}

}  // namespace blitz::bench
