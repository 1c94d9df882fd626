// SPDX-License-Identifier: MIT
// `blitz bench`: runs blitz and each peer on the same workloads, interleaved (for every
// repetition, one child process per implementation in turn: A B C A B C ...), keeps every
// repetition and writes the report: bench.json (everything), bench.md (tables, targets, machine
// record, placement) and PNG plots drawn by gnuplot when it is installed.

#include "bench.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "blitz/topology.hpp"
#include "harness.hpp"
#include "table.hpp"
#include "bench_workloads.hpp"

namespace blitz::cli {
namespace fs = std::filesystem;

const std::vector<std::string>& known_peers() {
    static const std::vector<std::string> p = {"tokio", "go", "asio", "tbb", "noprobes"};
    return p;
}

// Not in the default set: blitz with bounded spinning before parking (the parking experiment).
const std::vector<std::string>& extra_peers() {
    static const std::vector<std::string> p = {"spin20", "spin100"};
    return p;
}

namespace {

// ---- child processes ------------------------------------------------------------------------

struct child_result {
    std::string out, err;
    int status = -1;
    bool timed_out = false;
};

// Runs argv with stdout and stderr captured; kills it after `timeout`.
child_result run_child(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
    child_result r;
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            r.timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000))) < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[4096];
            const ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    for (auto& f : fds) {
        if (f.fd >= 0) close(f.fd);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    r.status = st;
    return r;
}

// ---- the peers' JSON (one flat object per line: strings, numbers, arrays of numbers) ---------

struct jvalue {
    std::string s;
    double n = 0;
    std::vector<double> arr;
    bool is_string = false;
};

std::optional<std::map<std::string, jvalue>> parse_line(const std::string& line) {
    std::map<std::string, jvalue> m;
    std::size_t i = 0;
    auto ws = [&] { while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i; };
    auto str = [&](std::string& out) {
        if (line[i] != '"') return false;
        for (++i; i < line.size() && line[i] != '"'; ++i) {
            if (line[i] == '\\' && i + 1 < line.size()) {
                ++i;
                out += line[i] == 'n' ? '\n' : line[i];
            } else {
                out += line[i];
            }
        }
        ++i;
        return true;
    };
    auto num = [&](double& out) {
        const char* b = line.c_str() + i;
        char* e = nullptr;
        out = std::strtod(b, &e);
        if (e == b) return false;
        i += static_cast<std::size_t>(e - b);
        return true;
    };
    ws();
    if (i >= line.size() || line[i] != '{') return std::nullopt;
    ++i;
    for (;;) {
        ws();
        if (i < line.size() && line[i] == '}') return m;
        std::string key;
        if (i >= line.size() || !str(key)) return std::nullopt;
        ws();
        if (i >= line.size() || line[i] != ':') return std::nullopt;
        ++i;
        ws();
        jvalue v;
        if (i < line.size() && line[i] == '"') {
            v.is_string = str(v.s);
        } else if (i < line.size() && line[i] == '[') {
            ++i;
            for (;;) {
                ws();
                if (i < line.size() && line[i] == ']') {
                    ++i;
                    break;
                }
                double d;
                if (!num(d)) return std::nullopt;
                v.arr.push_back(d);
                ws();
                if (i < line.size() && line[i] == ',') ++i;
            }
        } else if (!num(v.n)) {
            return std::nullopt;
        }
        m[key] = std::move(v);
        ws();
        if (i < line.size() && line[i] == ',') ++i;
    }
}

// ---- what was measured ---------------------------------------------------------------------

struct series {
    std::string version, placement, not_run;
    long ops = 0;
    std::vector<double> reps, samples;
    double allocs = -1, bytes = -1;
    bool seen = false;
};

struct stats {
    double median = 0, min = 0, max = 0, cv = 0;
};

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

stats summarize(const std::vector<double>& v) {
    stats s;
    if (v.empty()) return s;
    s.median = quantile(v, 0.5);
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    double mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    s.cv = v.size() > 1 && mean > 0 ? std::sqrt(var / static_cast<double>(v.size() - 1)) / mean : 0;
    return s;
}

// blitz's repetition i over the peer's repetition i (both from the same round), for every
// round both ran.
std::vector<double> pair_ratios(const series& a, const series& b) {
    std::vector<double> r;
    for (std::size_t i = 0; i < std::min(a.reps.size(), b.reps.size()); ++i) {
        if (b.reps[i] > 0) r.push_back(a.reps[i] / b.reps[i]);
    }
    return r;
}

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

// A duration in ns with a readable unit.
std::string dur(double ns) {
    if (ns >= 1e9) return fmt("%.3f s", ns / 1e9);
    if (ns >= 1e6) return fmt("%.2f ms", ns / 1e6);
    if (ns >= 1e3) return fmt("%.1f us", ns / 1e3);
    return fmt("%.1f ns", ns);
}

struct impl {
    std::string name;
    std::vector<std::string> argv;  // without the per-run flags
    std::string missing;            // why it cannot run here ("" = it can)
};

std::string exe_dir() {
    std::error_code ec;
    const auto p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : p.parent_path().string();
}

std::vector<impl> implementations(const bench_options& o) {
    const std::string here = exe_dir();
    const char* env = std::getenv("BLITZ_PEERS_DIR");
    const std::string peers = env ? env : here + "/../peers";
    std::vector<impl> v;
    // blitz-runner: the library users link (no negative controls compiled in), not this binary.
    v.push_back({"blitz", {here + "/blitz-runner", "--peer", "blitz"}, ""});
    if (!fs::exists(v.back().argv[0])) v.back().missing = "blitz-runner not built";
    if (o.topology.policy != placement_policy::none) {
        v.back().argv.push_back("--pin");
        v.back().argv.push_back(to_string(o.topology.policy));
    }
    for (const auto& p : o.peers) {
        impl i{p, {}, ""};
        if (p == "tokio") i.argv = {peers + "/tokio/release/tokio-peer"};
        if (p == "go") i.argv = {peers + "/go-peer"};
        if (p == "asio") i.argv = {peers + "/asio-peer"};
        if (p == "tbb") i.argv = {peers + "/tbb-peer"};
        if (p.rfind("spin", 0) == 0) {
            i.name = "blitz-" + p;
            i.argv = {here + "/blitz-runner", "--peer", i.name, "--park-spin-us", p.substr(4)};
            if (o.topology.policy != placement_policy::none) {
                i.argv.push_back("--pin");
                i.argv.push_back(to_string(o.topology.policy));
            }
        }
        if (p == "noprobes") {
            i.name = "blitz-noprobes";
            i.argv = {here + "/blitz-noprobes", "--peer", "blitz-noprobes"};
            if (o.topology.policy != placement_policy::none) {
                i.argv.push_back("--pin");
                i.argv.push_back(to_string(o.topology.policy));
            }
        }
        if (!fs::exists(i.argv[0])) {
            i.missing = p == "noprobes" ? "blitz-noprobes not built (release preset builds it)"
                                        : i.argv[0] + " not built (run `make peers`)";
        }
        v.push_back(std::move(i));
    }
    return v;
}

// Targets of issue 7: reported, never asserted.
struct target {
    std::string workload, against, what;
    double ratio;  // blitz/peer at most this
};

std::vector<target> ratio_targets() {
    std::vector<target> t;
    for (const char* w : {"spawn_many_local", "spawn_many_remote_idle", "spawn_many_remote_busy1",
                          "spawn_many_remote_busy2", "yield_many", "ping_pong", "chained_spawn"}) {
        t.push_back({w, "tokio", "scheduler workload at most 0.5x Tokio", 0.5});
    }
    t.push_back({"skynet_1m", "go", "skynet at most 0.5x Go", 0.5});
    t.push_back({"channel_send", "tokio", "reference runtime's published ratio 0.47x", 0.47});
    t.push_back({"oneshot", "tokio", "reference runtime's published ratio 0.25x", 0.25});
    t.push_back({"watch", "tokio", "reference runtime's published ratio 0.30x", 0.30});
    t.push_back({"barrier", "tokio", "reference runtime's published ratio 0.04x", 0.04});
    t.push_back({"mutex_contended", "tokio", "win a row the reference lost (below 1x)", 1.0});
    t.push_back({"channel_mpmc", "tokio", "win a row the reference lost (below 1x)", 1.0});
    return t;
}

// Uncontended primitive rows that should not allocate (a oneshot allocates its shared state, as
// Tokio's does, so it is not among them).
const std::vector<std::string>& zero_alloc_rows() {
    static const std::vector<std::string> v = {"mutex", "rwlock_read", "rwlock_write", "semaphore",
                                               "channel_send", "channel_recv", "channel_roundtrip",
                                               "watch", "once_cell_get", "notify", "timer_insert_cancel"};
    return v;
}

using key = std::pair<std::string, std::string>;  // (workload, implementation)

struct run_data {
    unsigned workers = 0;
    std::vector<std::string> names;  // workloads in order
    std::map<std::string, std::string> kinds;
    std::map<key, series> s;
};

bool is_latency(const run_data& d, const std::string& w) {
    auto it = d.kinds.find(w);
    return it != d.kinds.end() && it->second == "latency";
}

void write_plots(const run_data& d, const std::vector<impl>& impls, const std::string& dir,
                 std::ostream& md, std::vector<std::string>& pngs) {
    const std::string w = std::to_string(d.workers);
    const std::string base = dir + "/plots";
    fs::create_directories(base);
    // Ratios: one column per peer, one row per workload; log scale, lines at 1 and 0.5.
    std::ofstream dat(base + "/ratios-w" + w + ".dat");
    dat << "workload";
    std::vector<std::string> cols;
    for (const auto& i : impls) {
        if (i.name != "blitz") cols.push_back(i.name);
    }
    for (const auto& c : cols) dat << ' ' << c;
    dat << '\n';
    int rows = 0;
    for (const auto& name : d.names) {
        if (is_latency(d, name)) continue;
        const series& b = d.s.at({name, "blitz"});
        std::ostringstream line;
        line << name;
        bool any = false;
        for (const auto& c : cols) {
            auto it = d.s.find({name, c});
            const auto r = it == d.s.end() ? std::vector<double>{} : pair_ratios(b, it->second);
            if (r.empty()) {
                line << " NaN";
            } else {
                line << ' ' << quantile(r, 0.5);
                any = true;
            }
        }
        if (any) {
            dat << line.str() << '\n';
            ++rows;
        }
    }
    dat.close();
    // Latency distributions: the sorted samples of each implementation (an empirical CDF).
    std::ofstream lat(base + "/latency-w" + w + ".dat");
    std::vector<std::pair<std::string, int>> blocks;
    int idx = 0;
    for (const auto& name : d.names) {
        if (!is_latency(d, name)) continue;
        for (const auto& i : impls) {
            auto it = d.s.find({name, i.name});
            if (it == d.s.end() || it->second.samples.empty()) continue;
            auto v = it->second.samples;
            std::sort(v.begin(), v.end());
            lat << "# " << name << " " << i.name << "\n";
            for (std::size_t k = 0; k < v.size(); ++k) {
                lat << v[k] / 1e3 << ' ' << double(k + 1) / double(v.size()) << '\n';
            }
            lat << "\n\n";
            blocks.push_back({name + " " + i.name, idx++});
        }
    }
    lat.close();
    std::ofstream gp(base + "/plots-w" + w + ".gp");
    gp << "set terminal pngcairo size 1800,800 noenhanced\nset datafile missing 'NaN'\n";
    if (rows > 0) {
        gp << "set output '" << base << "/ratios-w" << w << ".png'\n"
           << "set title 'blitz time / peer time, " << w << " workers (median of the pairs of one run; below 1: blitz faster)'\n"
           << "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
           << "set logscale y\nset yrange [0.01:100]\nset xtics rotate by 45 right scale 0\nset key top left\nset grid ytics\n"
           << "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'\n"
           << "set arrow 2 from graph 0, first 0.5 to graph 1, first 0.5 nohead dt 2 lc rgb 'red'\n"
           << "plot ";
        for (std::size_t c = 0; c < cols.size(); ++c) {
            gp << (c ? ", " : "") << "'" << base << "/ratios-w" << w << ".dat' using " << c + 2
               << ":xtic(1) title columnheader";
        }
        gp << "\nunset arrow 1\nunset arrow 2\nunset logscale y\nunset yrange\nunset xtics\nset xtics\n";
    }
    if (!blocks.empty()) {
        gp << "set output '" << base << "/latency-w" << w << ".png'\n"
           << "set title 'latency distributions, " << w << " workers (empirical CDF)'\n"
           << "set style data lines\nset logscale x\nset xlabel 'microseconds'\nset ylabel 'fraction of samples'\nset key bottom right\n"
           << "plot ";
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            gp << (b ? ", " : "") << "'" << base << "/latency-w" << w << ".dat' index " << blocks[b].second
               << " using 1:2 lw 2 title '" << blocks[b].first << "'";
        }
        gp << "\n";
    }
    gp.close();
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
        md << "Plots not drawn: gnuplot is not installed (`make peers` installs gnuplot-nox); the data "
              "and script are in plots/.\n\n";
        return;
    }
    const std::string cmd = "gnuplot '" + base + "/plots-w" + w + ".gp' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
        md << "Plots: gnuplot failed on plots/plots-w" << w << ".gp.\n\n";
        return;
    }
    if (rows > 0) pngs.push_back("plots/ratios-w" + w + ".png");
    if (!blocks.empty()) pngs.push_back("plots/latency-w" + w + ".png");
}

void print_json_numbers(std::ostream& os, const std::vector<double>& v) {
    os << '[';
    for (std::size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << fmt("%.0f", v[i]);
    os << ']';
}

}  // namespace

int run_bench(const bench_options& o) {
    const auto started = std::chrono::steady_clock::now();
    const std::regex re(o.filter);
    const std::vector<impl> impls = implementations(o);
    if (std::none_of(bench::workloads().begin(), bench::workloads().end(),
                     [&](const bench::workload& w) { return std::regex_search(w.name, re); })) {
        throw std::invalid_argument("bench: --filter '" + o.filter + "' matches no workload");
    }
    std::vector<run_data> runs;
    const auto timeout = std::chrono::seconds(o.timeout_s);
    for (unsigned workers : o.workers) {
        run_data d;
        d.workers = workers;
        for (const auto& w : bench::workloads()) {
            if (!std::regex_search(w.name, re)) continue;
            d.names.push_back(w.name);
            d.kinds[w.name] = bench::kind_name(w.group);
            std::cerr << "bench: " << w.name << " (" << workers << " workers)" << std::flush;
            for (unsigned rep = 0; rep < o.repetitions; ++rep) {
                for (const auto& i : impls) {
                    series& s = d.s[{w.name, i.name}];
                    if (!i.missing.empty()) {
                        s.not_run = i.missing;
                        continue;
                    }
                    if (!s.not_run.empty()) continue;
                    std::vector<std::string> argv = i.argv;
                    for (const std::string& a : {std::string("--workers"), std::to_string(workers),
                                                 std::string("--reps"), std::string("1"),
                                                 std::string("--filter"), "^" + w.name + "$"}) {
                        argv.push_back(a);
                    }
                    if (rep == 0 && !o.smoke) argv.push_back("--allocs");
                    if (o.smoke && i.name == "blitz") argv.push_back("--no-warmup");
                    const child_result c = run_child(argv, timeout);
                    if (c.timed_out) {
                        s.not_run = "did not finish within " + std::to_string(o.timeout_s) + " s (killed)";
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
                        s.reps.insert(s.reps.end(), j["reps_ns"].arr.begin(), j["reps_ns"].arr.end());
                        s.samples.insert(s.samples.end(), j["samples_ns"].arr.begin(), j["samples_ns"].arr.end());
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
                std::cerr << '.' << std::flush;
            }
            std::cerr << '\n';
        }
        runs.push_back(std::move(d));
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    // ---- the report ---------------------------------------------------------------------------
    const conformance::machine_record m = conformance::read_machine_record();
    std::ostringstream md, js;
    std::vector<std::string> pngs;
    const std::string dir = !o.out_dir.empty() ? o.out_dir : "results/" + m.id + (o.quick ? "/quick" : "");
    const bool write = o.out_dir != "-";
    if (write) fs::create_directories(dir);

    md << "# Benchmarks: blitz side by side with its peers\n\n"
       << "Every number below comes from one run of `" << o.command << "`: for each workload and "
       << "each repetition, one child process per implementation in turn (interleaved), each doing "
       << "an untimed warm-up and then one timed repetition. Ratios are blitz's time over the peer's, "
       << "taken pair by pair from the same round (median of the pairs, with their range); below 1 "
       << "blitz is faster. Targets are reported, never asserted.\n\n"
       << "## Machine\n\n| field | value |\n|---|---|\n"
       << "| machine | " << m.id << " |\n| CPU | " << m.cpu << " |\n| logical CPUs | " << m.logical_cpus
       << " |\n| hypervisor | " << m.hypervisor << " |\n| topology (hwloc) | " << m.topology
       << " |\n| kernel | " << m.kernel << " |\n| compiler | " << m.compiler << " |\n| build flags | "
       << m.build_flags << " |\n| commit | " << m.commit << " |\n| repetitions | " << o.repetitions
       << " |\n| duration | " << fmt("%.0f", secs) << " s |\n\n";
    md << "## Implementations\n\n| implementation | version | placement |\n|---|---|---|\n";
    for (const auto& i : impls) {
        std::string version, placement = i.name.rfind("blitz", 0) == 0 ? "" : "unpinned (the OS places its threads)";
        for (const auto& d : runs) {
            for (const auto& [k, s] : d.s) {
                if (k.second != i.name || !s.seen) continue;
                if (version.empty()) version = s.version;
                if (!s.placement.empty() && placement.find(s.placement) == std::string::npos) {
                    placement += (placement.empty() ? "" : "; ") + std::to_string(d.workers) + " workers: " + s.placement;
                }
            }
        }
        md << "| " << i.name << " | " << (i.missing.empty() ? version : "not run: " + i.missing) << " | "
           << placement << " |\n";
    }
    md << "\n";

    js << "{\n  \"machine\": {\"id\": \"" << m.id << "\", \"cpu\": \"" << conformance::json_escape(m.cpu)
       << "\", \"logical_cpus\": " << m.logical_cpus << ", \"hypervisor\": \"" << m.hypervisor
       << "\", \"topology\": \"" << conformance::json_escape(m.topology) << "\", \"kernel\": \"" << m.kernel
       << "\", \"compiler\": \"" << conformance::json_escape(m.compiler) << "\", \"build_flags\": \""
       << conformance::json_escape(m.build_flags) << "\", \"commit\": \"" << m.commit << "\"},\n"
       << "  \"command\": \"" << conformance::json_escape(o.command) << "\",\n  \"repetitions\": "
       << o.repetitions << ",\n  \"duration_s\": " << fmt("%.1f", secs) << ",\n  \"results\": [\n";
    bool first_js = true;

    std::ostringstream targets_md;
    std::vector<std::string> header = {"workers", "workload", "blitz median", "ns/op"};
    for (const auto& i : impls) {
        if (i.name != "blitz") header.push_back("vs " + i.name);
    }
    table summary(header);
    for (const auto& d : runs) {
        md << "## " << d.workers << " workers\n\n"
           << "| workload | kind | implementation | median | min - max | CV | ns/op | allocs/op | bytes/op | blitz/this (pairs) |\n"
           << "|---|---|---|---|---|---|---|---|---|---|\n";
        std::ostringstream lat;
        for (const auto& name : d.names) {
            const series& b = d.s.at({name, "blitz"});
            std::vector<std::string> srow = {std::to_string(d.workers), name, b.seen ? dur(summarize(b.reps).median) : "failed",
                                             b.seen && !is_latency(d, name) ? fmt("%.1f", summarize(b.reps).median / double(std::max(1L, b.ops))) : "-"};
            std::map<std::string, std::string> vs;
            for (const auto& i : impls) {
                const series& s = d.s.at({name, i.name});
                const stats st = summarize(s.reps);
                std::string ratio = "-";
                if (i.name != "blitz" && s.seen && b.seen) {
                    const auto r = pair_ratios(b, s);
                    if (!r.empty()) {
                        const stats rs = summarize(r);
                        ratio = fmt("%.2fx", rs.median) + " (" + fmt("%.2f", rs.min) + "-" + fmt("%.2f", rs.max) + ")";
                        vs[i.name] = fmt("%.2fx", rs.median);
                    }
                }
                if (!s.seen) {
                    if (i.name == "blitz" || s.not_run != "not implemented by this peer") {
                        md << "| " << name << " | " << d.kinds.at(name) << " | " << i.name << " | not run: "
                           << s.not_run << " | | | | | | |\n";
                    }
                } else {
                    const bool latency = is_latency(d, name);
                    md << "| " << name << " | " << d.kinds.at(name) << " | " << i.name << " | " << dur(st.median)
                       << " | " << dur(st.min) << " - " << dur(st.max) << " | " << fmt("%.1f%%", st.cv * 100)
                       << " | " << (latency ? "(per sample)" : fmt("%.1f", st.median / double(std::max(1L, s.ops))))
                       << " | " << (s.allocs < 0 ? "-" : fmt("%.3f", s.allocs)) << " | "
                       << (s.bytes < 0 ? "-" : fmt("%.1f", s.bytes)) << " | " << ratio << " |\n";
                    if (latency) {
                        lat << "| " << name << " | " << i.name << " | " << s.samples.size() << " | "
                            << dur(quantile(s.samples, 0.5)) << " | " << dur(quantile(s.samples, 0.99)) << " | "
                            << dur(s.samples.empty() ? 0 : *std::max_element(s.samples.begin(), s.samples.end())) << " |\n";
                    }
                }
                js << (first_js ? "" : ",\n") << "    {\"workers\": " << d.workers << ", \"workload\": \"" << name
                   << "\", \"kind\": \"" << d.kinds.at(name) << "\", \"implementation\": \"" << i.name << "\"";
                first_js = false;
                if (!s.seen) {
                    js << ", \"not_run\": \"" << conformance::json_escape(s.not_run) << "\"}";
                    continue;
                }
                js << ", \"version\": \"" << conformance::json_escape(s.version) << "\", \"ops\": " << s.ops
                   << ", \"median_ns\": " << fmt("%.0f", st.median) << ", \"min_ns\": " << fmt("%.0f", st.min)
                   << ", \"max_ns\": " << fmt("%.0f", st.max) << ", \"cv\": " << fmt("%.4f", st.cv)
                   << ", \"ns_per_op\": " << fmt("%.2f", st.median / double(std::max(1L, s.ops)));
                if (s.allocs >= 0) js << ", \"allocs_per_op\": " << fmt("%.4f", s.allocs) << ", \"bytes_per_op\": " << fmt("%.1f", s.bytes);
                if (i.name != "blitz" && b.seen) {
                    const auto r = pair_ratios(b, s);
                    if (!r.empty()) js << ", \"ratio_blitz_over_this\": " << fmt("%.4f", summarize(r).median) << ", \"pair_ratios\": [" << [&] {
                        std::string t;
                        for (std::size_t k = 0; k < r.size(); ++k) t += (k ? "," : "") + fmt("%.4f", r[k]);
                        return t;
                    }() << "]";
                }
                js << ", \"reps_ns\": ";
                print_json_numbers(js, s.reps);
                if (!s.samples.empty()) {
                    js << ", \"samples_ns\": ";
                    print_json_numbers(js, s.samples);
                }
                js << "}";
            }
            for (const auto& i : impls) {
                if (i.name != "blitz") srow.push_back(vs.count(i.name) ? vs[i.name] : "-");
            }
            summary.add(srow);
        }
        md << "\n";
        if (!lat.str().empty()) {
            md << "Latency distributions (" << d.workers << " workers; every sample of every repetition):\n\n"
               << "| workload | implementation | samples | p50 | p99 | max |\n|---|---|---|---|---|---|\n"
               << lat.str() << "\n";
        }
        // Targets of issue 7 for this worker count.
        targets_md << "### " << d.workers << " workers\n\n| target | workload | measured | verdict |\n|---|---|---|---|\n";
        for (const auto& t : ratio_targets()) {
            if (!d.s.count({t.workload, "blitz"})) continue;
            const std::string peer = t.against;
            auto it = d.s.find({t.workload, peer});
            std::string measured = "-", verdict = "not measured (" + peer + " not run)";
            if (it != d.s.end() && it->second.seen && d.s.at({t.workload, "blitz"}).seen) {
                const auto r = pair_ratios(d.s.at({t.workload, "blitz"}), it->second);
                if (!r.empty()) {
                    const double med = quantile(r, 0.5);
                    measured = fmt("%.2fx ", med) + peer;
                    verdict = med <= t.ratio ? "met" : "missed by " + fmt("%.2fx", med / t.ratio) + " (needs " + fmt("%.2fx", t.ratio) + ")";
                    if (t.ratio == 1.0 && med >= 1.0) verdict = "missed: " + fmt("%.2fx", med) + " (needs below 1x)";
                }
            } else if (it != d.s.end() && !it->second.not_run.empty()) {
                verdict = "not measured: " + peer + " " + it->second.not_run;
            }
            targets_md << "| " << t.what << " | " << t.workload << " | " << measured << " | " << verdict << " |\n";
        }
        for (const auto& w : zero_alloc_rows()) {
            auto it = d.s.find({w, "blitz"});
            if (it == d.s.end() || !it->second.seen || it->second.allocs < 0) continue;
            targets_md << "| zero allocations per op (uncontended) | " << w << " | " << fmt("%.4f", it->second.allocs)
                       << " allocs/op | " << (it->second.allocs < 0.001 ? "met" : "missed") << " |\n";
        }
        if (auto it = d.s.find({"spawn_many_local", "blitz"}); it != d.s.end() && it->second.seen && it->second.allocs >= 0) {
            const series& s = it->second;
            targets_md << "| at most one allocation and 256 bytes per spawned task | spawn_many_local | "
                       << fmt("%.3f", s.allocs) << " allocs, " << fmt("%.0f", s.bytes) << " bytes per task | "
                       << (s.allocs <= 1.001 && s.bytes <= 256 ? "met" : "missed") << " |\n";
        }
        // Probes compiled in but off against compiled out: "within noise" when the median of
        // the pairwise ratios is within the larger of the two spreads (CV) of 1.
        for (const auto& name : d.names) {
            auto a = d.s.find({name, "blitz"});
            auto p = d.s.find({name, "blitz-noprobes"});
            if (a == d.s.end() || p == d.s.end() || !a->second.seen || !p->second.seen) continue;
            if (d.kinds.at(name) != "scheduler" && d.kinds.at(name) != "fork-join") continue;
            const auto r = pair_ratios(a->second, p->second);
            if (r.empty()) continue;
            const double med = quantile(r, 0.5);
            const double noise = std::max(summarize(a->second.reps).cv, summarize(p->second.reps).cv);
            targets_md << "| probes compiled in but off within noise of compiled out | " << name << " | "
                       << fmt("%.3fx", med) << " (noise " << fmt("%.1f%%", noise * 100) << ") | "
                       << (std::abs(med - 1) <= noise ? "met" : "outside noise by " + fmt("%.1f%%", (std::abs(med - 1) - noise) * 100)) << " |\n";
        }
        targets_md << "\n";
        if (write && o.plots) write_plots(d, impls, dir, md, pngs);
    }
    js << "\n  ]\n}\n";
    md << "## Targets (issue 7)\n\nRatio targets use the median of the pairwise ratios. The seeds do not "
          "carry the reference runtime's whole table; the rows with a published ratio are the four the "
          "issue names.\n\n"
       << targets_md.str();
    if (!pngs.empty()) {
        md << "## Plots\n\n";
        for (const auto& p : pngs) md << "![" << p << "](" << p << ")\n\n";
    }

    std::cout << "\nBenchmarks (" << o.repetitions << " interleaved repetitions; ratio = blitz time / peer time, median of pairs)\n\n";
    summary.print(std::cout);
    if (write) {
        std::ofstream(dir + "/bench.md") << md.str();
        std::ofstream(dir + "/bench.json") << js.str();
        if (!m.topology_xml.empty() && !fs::exists(dir + "/topology.xml")) std::ofstream(dir + "/topology.xml") << m.topology_xml;
        std::cout << "\nwrote " << dir << "/bench.md and bench.json" << (pngs.empty() ? "" : " and plots") << "\n";
    }
    bool blitz_failed = false;
    for (const auto& d : runs) {
        for (const auto& n : d.names) {
            const series& b = d.s.at({n, "blitz"});
            if (b.seen) continue;
            blitz_failed = true;
            std::cerr << "bench: blitz " << n << " (" << d.workers << " workers) failed: " << b.not_run << "\n";
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
                if (std::find(known_peers().begin(), known_peers().end(), p) == known_peers().end() &&
                    std::find(extra_peers().begin(), extra_peers().end(), p) == extra_peers().end()) {
                    throw std::invalid_argument("--peers: unknown peer '" + p +
                                                "' (known: tokio, go, asio, tbb, noprobes, spin20, spin100, all, none)");
                }
                o.peers.push_back(p);
            }
        } else if (a == "--workers") {
            std::istringstream in(value());
            for (std::string w; std::getline(in, w, ',');) workers.push_back(count("--workers", w));
        } else if (a == "--pin") {
            o.topology.policy = parse_placement_policy(value());
            if (o.topology.policy == placement_policy::list) throw std::invalid_argument("--pin: list needs PUs; use compact or scatter");
        } else if (a == "--repetitions") {
            o.repetitions = count(a, value());
        } else if (a == "--timeout") {
            o.timeout_s = count(a, value());
            timeout_given = true;
        } else if (a == "--out") {
            o.out_dir = value();
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
            std::cout << "usage: blitz bench [--filter RE] [--peers LIST] [--workers N[,N...]] [--pin POLICY]\n"
                         "                   [--repetitions N] [--quick] [--smoke] [--out DIR] [--no-plots] [--timeout S]\n"
                         "  --peers      tokio,go,asio,tbb,noprobes (default: all), or none; spin20 and\n"
                         "               spin100 add blitz spinning that many us before parking\n"
                         "  --workers    worker counts (default: 4 and one per hardware thread)\n"
                         "  --pin        placement of blitz's workers: none (default), compact, scatter\n"
                         "  --quick      3 repetitions, 4 workers (make run); writes results/<machine>/quick/\n"
                         "  --smoke      every blitz workload once, no peers, no files (make test)\n"
                         "  --out        report directory (default results/<machine-id>; - writes nothing)\n"
                         "  --timeout    seconds one child process may take before it is killed (default 60;\n"
                         "               1200 with --smoke, where it only catches hangs)\n";
            return 0;
        } else {
            throw std::invalid_argument("bench: unknown argument '" + a + "' (see blitz bench --help)");
        }
    }
    if (!peers_given) o.peers = known_peers();
    // A smoke run checks that each workload completes, not how fast: under TSan on a loaded
    // 2-core machine fib_30 alone takes 17 s and was killed at 60 s by a concurrent test's load.
    // The timeout then serves only as a hang watchdog (an explicit --timeout still wins).
    if (o.smoke && !timeout_given) o.timeout_s = 1200;
    if (workers.empty()) {
        workers.push_back(4);
        const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
        if (hw != 4) workers.push_back(hw);
    }
    o.workers = workers;
    return run_bench(o);
}

}  // namespace blitz::cli
