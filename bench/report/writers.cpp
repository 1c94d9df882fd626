// SPDX-License-Identifier: MIT
#include "writers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "json_writer.hpp"

namespace blitz::bench {
namespace fs = std::filesystem;
namespace {

// The blitz implementation an implementation's ratio is taken against: Tokio's current-thread
// runtime against blitz's (the current-thread column, issue 47), everything else against the
// default blitz.
const char* reference_for(const std::string& impl) {
    return impl == "tokio-ct" ? "blitz-ct" : "blitz";
}

// The ratio of implementation `i` on row `name` against its reference (empty: not measured).
std::vector<double> ratios_for(const run_data& d, const std::string& name, const std::string& i) {
    const std::string ref = reference_for(i);
    if (i == "blitz") return {};
    auto b = d.s.find({name, ref});
    auto s = d.s.find({name, i});
    if (b == d.s.end() || s == d.s.end() || !b->second.seen || !s->second.seen) return {};
    return pair_ratios(b->second, s->second);
}

// Targets of issue 7: reported, never asserted.
struct target {
    std::string workload, against, what;
    double ratio;                // blitz/peer at most this
    std::string self = "blitz";  // the blitz implementation measured (blitz-ct: issue 47)
};

std::vector<target> ratio_targets() {
    std::vector<target> t;
    for (const char* w : {"spawn_many_local", "spawn_many_remote_idle", "spawn_many_remote_busy1",
                          "spawn_many_remote_busy2", "yield_many", "ping_pong", "chained_spawn"}) {
        t.push_back({w, "tokio", "scheduler workload at most 0.5x Tokio", 0.5});
    }
    t.push_back({"skynet_1m", "go", "skynet at most 0.5x Go", 0.5});
    // Issue 47: the current-thread runtimes against each other.
    for (const char* w : {"spawn_many_local", "yield_many", "ping_pong", "chained_spawn"}) {
        t.push_back(
            {w, "tokio-ct", "current-thread at most 0.7x Tokio's current_thread", 0.7, "blitz-ct"});
    }
    // The published ratios, on the rows with the reference's own definitions (single-task fast
    // paths; bench_workloads.cpp), and the same numbers held against this suite's awaiting rows.
    const std::pair<const char*, const char*> published[] = {{"channel_try_send", "channel_send"},
                                                             {"oneshot_try_recv", "oneshot"},
                                                             {"watch_send_borrow", "watch"},
                                                             {"barrier_new_1", "barrier"}};
    const double ratio[] = {0.47, 0.25, 0.30, 0.04};
    const char* says[] = {"0.47x", "0.25x", "0.30x", "0.04x"};
    for (std::size_t i = 0; i < 4; ++i) {
        t.push_back(
            {published[i].first, "tokio",
             std::string("reference runtime's published ratio ") + says[i] + " (its definition)",
             ratio[i]});
        t.push_back({published[i].second, "tokio",
                     std::string("reference runtime's published ratio ") + says[i] +
                         " (this suite's awaiting row)",
                     ratio[i]});
    }
    // The reference's oneshot was a value on the stack; blitz's like for like is oneshot_cell.
    t.push_back({"oneshot_cell_try_recv", "tokio",
                 "reference runtime's published ratio 0.25x (its definition, the oneshot in place)",
                 0.25});
    t.push_back({"mutex_contended", "tokio", "win a row the reference lost (below 1x)", 1.0});
    t.push_back({"channel_mpmc", "tokio", "win a row the reference lost (below 1x)", 1.0});
    return t;
}

// Uncontended primitive rows that should not allocate (a oneshot allocates its shared state, as
// Tokio's does, so it is not among them; a oneshot_cell keeps it inside itself, so it is).
const std::vector<std::string>& zero_alloc_rows() {
    static const std::vector<std::string> v = {"mutex",
                                               "rwlock_read",
                                               "rwlock_write",
                                               "semaphore",
                                               "channel_send",
                                               "channel_recv",
                                               "channel_roundtrip",
                                               "watch",
                                               "once_cell_get",
                                               "notify",
                                               "timer_insert_cancel",
                                               "channel_try_send",
                                               "watch_send_borrow",
                                               "oneshot_cell_try_recv",
                                               "barrier_new_1"};
    return v;
}

// One target row per scheduler and fork-join workload: blitz against one of its own builds with
// something compiled out (`peer`), by the median of the pairwise ratios and the larger of the
// two spreads; `verdict(median, noise)` says met or by how much not.
template <class Verdict>
void write_compiled_out_rows(std::ostream& md, const run_data& d, const std::string& peer,
                             const char* what, Verdict verdict) {
    for (const auto& name : d.names) {
        auto a = d.s.find({name, "blitz"});
        auto p = d.s.find({name, peer});
        if (a == d.s.end() || p == d.s.end() || !a->second.seen || !p->second.seen) continue;
        if (d.kinds.at(name) != "scheduler" && d.kinds.at(name) != "fork-join") continue;
        const auto r = pair_ratios(a->second, p->second);
        if (r.empty()) continue;
        const double med = quantile(r, 0.5);
        const double noise = std::max(summarize(a->second.reps).cv, summarize(p->second.reps).cv);
        md << "| " << what << " | " << name << " | " << fmt("%.3fx", med) << " (noise "
           << fmt("%.1f%%", noise * 100) << ") | " << verdict(med, noise) << " |\n";
    }
}

// The targets of issue 7 at one worker count, as Markdown rows.
void write_targets(std::ostream& md, const run_data& d) {
    md << "### " << d.workers
       << " workers\n\n| target | workload | measured | verdict |\n|---|---|---|---|\n";
    for (const auto& t : ratio_targets()) {
        if (!d.s.count({t.workload, t.self})) continue;
        const std::string peer = t.against;
        auto it = d.s.find({t.workload, peer});
        std::string measured = "-", verdict = "not measured (" + peer + " not run)";
        if (it != d.s.end() && it->second.seen && d.s.at({t.workload, t.self}).seen) {
            const auto r = pair_ratios(d.s.at({t.workload, t.self}), it->second);
            if (!r.empty()) {
                const double med = quantile(r, 0.5);
                measured = fmt("%.2fx ", med) + peer;
                verdict = med <= t.ratio ? "met"
                                         : "missed by " + fmt("%.2fx", med / t.ratio) + " (needs " +
                                               fmt("%.2fx", t.ratio) + ")";
                if (t.ratio == 1.0 && med >= 1.0)
                    verdict = "missed: " + fmt("%.2fx", med) + " (needs below 1x)";
            }
        } else if (it != d.s.end() && !it->second.not_run.empty()) {
            verdict = "not measured: " + peer + " " + it->second.not_run;
        }
        md << "| " << t.what << " | " << t.workload << " | " << measured << " | " << verdict
           << " |\n";
    }
    for (const auto& w : zero_alloc_rows()) {
        auto it = d.s.find({w, "blitz"});
        if (it == d.s.end() || !it->second.seen || it->second.allocs < 0) continue;
        md << "| zero allocations per op (uncontended) | " << w << " | "
           << fmt("%.4f", it->second.allocs) << " allocs/op | "
           << (it->second.allocs < 0.001 ? "met" : "missed") << " |\n";
    }
    if (auto it = d.s.find({"spawn_many_local", "blitz"});
        it != d.s.end() && it->second.seen && it->second.allocs >= 0) {
        const series& s = it->second;
        md << "| at most one allocation and 256 bytes per spawned task | spawn_many_local | "
           << fmt("%.3f", s.allocs) << " allocs, " << fmt("%.0f", s.bytes) << " bytes per task | "
           << (s.allocs <= 1.001 && s.bytes <= 256 ? "met" : "missed") << " |\n";
    }
    // Probes compiled in but off against compiled out: "within noise" when the median of the
    // pairwise ratios is within the larger of the two spreads (CV) of 1.
    write_compiled_out_rows(
        md, d, "blitz-noprobes", "probes compiled in but off within noise of compiled out",
        [](double med, double noise) {
            const double off = std::abs(med - 1);
            return off <= noise ? std::string("met")
                                : "outside noise by " + fmt("%.1f%%", (off - noise) * 100);
        });
    // The stall detector, histograms and dump records on (the default build) against compiled
    // out (issue 46): within 2% on every scheduler row, by the median of the pairwise ratios.
    write_compiled_out_rows(md, d, "blitz-noinspect", "inspection on within 2% of compiled out",
                            [](double med, double) {
                                return med <= 1.02
                                           ? std::string("met")
                                           : "missed by " + fmt("%.1f%%", (med - 1.02) * 100);
                            });
    md << "\n";
}

// One worker count's rows: every implementation's statistics, then the latency distributions.
void write_rows(std::ostream& md, const run_data& d, const std::vector<impl>& impls) {
    md << "## " << d.workers << " workers\n\n"
       << "| workload | kind | implementation | median | min - max | CV | ns/op | allocs/op | "
          "bytes/op | blitz/this (pairs) |\n"
       << "|---|---|---|---|---|---|---|---|---|---|\n";
    std::ostringstream lat;
    for (const auto& name : d.names) {
        for (const auto& i : impls) {
            const series& s = d.s.at({name, i.name});
            const stats st = summarize(s.reps);
            std::string ratio = "-";
            if (s.seen) {
                const auto r = ratios_for(d, name, i.name);
                if (!r.empty()) {
                    const stats rs = summarize(r);
                    ratio = fmt("%.2fx", rs.median) + " (" + fmt("%.2f", rs.min) + "-" +
                            fmt("%.2f", rs.max) + ")";
                }
            }
            if (!s.seen) {
                if (i.name == "blitz" || s.not_run != "not implemented by this peer") {
                    md << "| " << name << " | " << d.kinds.at(name) << " | " << i.name
                       << " | not run: " << s.not_run << " | | | | | | |\n";
                }
                continue;
            }
            const bool latency = d.is_latency(name);
            md << "| " << name << " | " << d.kinds.at(name) << " | " << i.name << " | "
               << dur(st.median) << " | " << dur(st.min) << " - " << dur(st.max) << " | "
               << fmt("%.1f%%", st.cv * 100) << " | "
               << (latency ? "(per sample)" : fmt("%.1f", st.median / double(std::max(1L, s.ops))))
               << " | " << (s.allocs < 0 ? "-" : fmt("%.3f", s.allocs)) << " | "
               << (s.bytes < 0 ? "-" : fmt("%.1f", s.bytes)) << " | " << ratio
               << (ratio != "-" && std::string(reference_for(i.name)) != "blitz"
                       ? std::string(" (") + reference_for(i.name) + "/this)"
                       : std::string())
               << " |\n";
            if (latency) {
                lat << "| " << name << " | " << i.name << " | " << s.samples.size() << " | "
                    << dur(quantile(s.samples, 0.5)) << " | " << dur(quantile(s.samples, 0.99))
                    << " | "
                    << dur(s.samples.empty()
                               ? 0
                               : *std::max_element(s.samples.begin(), s.samples.end()))
                    << " |\n";
            }
        }
    }
    md << "\n";
    if (!lat.str().empty()) {
        md << "Latency distributions (" << d.workers
           << " workers; every sample of every repetition):\n\n"
           << "| workload | implementation | samples | p50 | p99 | max "
              "|\n|---|---|---|---|---|---|\n"
           << lat.str() << "\n";
    }
}

void write_plots(const run_data& d, const std::vector<impl>& impls, const std::string& dir,
                 std::ostream& md, std::vector<std::string>& pngs) {
    const std::string w = std::to_string(d.workers);
    const std::string base = dir + "/plots";
    fs::create_directories(base);
    // Ratios: one bar per (workload, peer), placed explicitly: workload r's bar for peer c sits
    // at x = r * (peers + 1) + c, so labels ("not run") land exactly where a bar is missing.
    // One data block per peer (gnuplot's `index`), lines "x ratio"; log scale.
    std::vector<std::string> cols;
    for (const auto& i : impls) {
        if (i.name != "blitz") cols.push_back(i.name);
    }
    struct bar_row {
        std::string name;
        std::vector<double> ratio;  // NaN: not run
    };
    std::vector<bar_row> bars;
    for (const auto& name : d.names) {
        if (d.is_latency(name)) continue;
        bar_row row{name, {}};
        bool any = false;
        for (const auto& c : cols) {
            const auto r = ratios_for(d, name, c);
            row.ratio.push_back(r.empty() ? std::nan("") : quantile(r, 0.5));
            any = any || !r.empty();
        }
        if (any) bars.push_back(std::move(row));
    }
    const int rows = static_cast<int>(bars.size());
    const std::size_t stride = cols.size() + 1;
    // A peer with no bar at all is only its "not run" labels (gnuplot does not count an empty
    // data block, so it gets none); block[c] is peer c's data block, -1 for none.
    std::vector<int> block(cols.size(), -1);
    {
        std::ofstream dat(base + "/ratios-w" + w + ".dat");
        int next = 0;
        for (std::size_t c = 0; c < cols.size(); ++c) {
            bool ran = false;
            for (const bar_row& r : bars) ran = ran || !std::isnan(r.ratio[c]);
            if (!ran) continue;
            block[c] = next++;
            dat << "# vs " << cols[c] << "\n";
            for (std::size_t r = 0; r < bars.size(); ++r) {
                if (!std::isnan(bars[r].ratio[c])) {
                    dat << r * stride + c << ' ' << bars[r].ratio[c] << '\n';
                }
            }
            dat << "\n\n";
        }
    }
    // Latency distributions: the sorted samples of each implementation (an empirical CDF).
    std::ofstream lat(base + "/latency-w" + w + ".dat");
    std::vector<std::pair<std::string, int>> blocks;
    int idx = 0;
    for (const auto& name : d.names) {
        if (!d.is_latency(name)) continue;
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
    // One panel per metric (ratios; latency), axes labelled with their units, the legend
    // outside the data, fill patterns and dash types as well as colours, the reference lines in
    // the legend, and "not run" written where a bar is missing.
    gp << "set terminal pngcairo size 1800,900 noenhanced font ',11'\nset datafile missing 'NaN'\n";
    if (rows > 0) {
        double lo = 0.5, hi = 1.0;
        for (const bar_row& r : bars) {
            for (double v : r.ratio) {
                if (std::isnan(v)) continue;
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
        }
        // A decade-aligned range around the data, so bars never run off the panel.
        const double ylo = std::pow(10.0, std::floor(std::log10(lo * 0.8)));
        const double yhi = std::pow(10.0, std::ceil(std::log10(hi * 1.25)));
        gp << "set output '" << base << "/ratios-w" << w << ".png'\n"
           << "set title 'blitz time / peer time at " << w
           << " workers: median of the repetition pairs of one run (below 1: blitz is faster)'\n"
           << "set style fill pattern border -1\nset boxwidth 0.9\n"
           << "set logscale y\nset yrange [" << ylo << ":" << yhi << "]\n"
           << "set xrange [-1:" << rows * stride - 1 << "]\n"
           << "set ylabel 'blitz time / peer time (ratio, log scale)'\nset xlabel 'workload'\n"
           << "set grid ytics\nset key outside right top vertical box\nset xtics rotate by 45 "
              "right scale 0 (";
        for (std::size_t r = 0; r < bars.size(); ++r) {
            gp << (r ? ", " : "") << "'" << bars[r].name << "' "
               << double(r * stride) + double(cols.size() - 1) / 2;
        }
        gp << ")\n";
        for (std::size_t r = 0; r < bars.size(); ++r) {
            for (std::size_t c = 0; c < cols.size(); ++c) {
                if (!std::isnan(bars[r].ratio[c])) continue;
                gp << "set label 'not run' at " << r * stride + c << ", " << ylo * 1.15
                   << " rotate by 90 left font ',8' tc rgb 'gray40'\n";
            }
        }
        gp << "plot ";
        for (std::size_t c = 0; c < cols.size(); ++c) {
            if (block[c] < 0) continue;
            gp << "'" << base << "/ratios-w" << w << ".dat' index " << block[c]
               << " using 1:2 with boxes fs pattern " << c % 8 << " title 'vs " << cols[c] << "', ";
        }
        gp << "1 with lines lw 2 lc rgb 'black' title 'parity (1x)'"
           << ", 0.5 with lines dt 2 lw 2 lc rgb 'red' title 'target (0.5x)'\n"
           << "unset label\nunset logscale y\nunset yrange\nunset xrange\nset xtics auto\n"
           << "unset xlabel\nunset ylabel\n";
    }
    if (!blocks.empty()) {
        gp << "set output '" << base << "/latency-w" << w << ".png'\n"
           << "set title 'latency distributions at " << w
           << " workers (empirical CDF: the fraction of samples at or below each latency)'\n"
           << "set style data lines\nset logscale x\nset yrange [0:1]\n"
           << "set xlabel 'latency (microseconds, log scale)'\nset ylabel 'fraction of samples'\n"
           << "set grid\nset key outside right top vertical box\nplot ";
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            gp << (b ? ", " : "") << "'" << base << "/latency-w" << w << ".dat' index "
               << blocks[b].second << " using 1:2 lw 2 dt " << (b % 5) + 1 << " title '"
               << blocks[b].first << "'";
        }
        gp << "\n";
    }
    gp.close();
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
        md << "Plots not drawn: gnuplot is not installed (`make peers` installs gnuplot-nox); the "
              "data "
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

}  // namespace

std::string render_markdown(const report_input& in, const std::string& plots_dir) {
    const report::machine_record& m = in.machine;
    std::ostringstream md;
    md << "# Benchmarks: blitz side by side with its peers\n\n"
       << "Every number below comes from one run of `" << in.o.command
       << "`: for each workload and "
       << "each repetition, one child process per implementation in turn (interleaved), each doing "
       << "an untimed warm-up and then one timed repetition. Ratios are blitz's time over the "
          "peer's, "
       << "taken pair by pair from the same round (median of the pairs, with their range); below 1 "
       << "blitz is faster. Targets are reported, never asserted.\n\n"
       << "## Machine\n\n| field | value |\n|---|---|\n";
    report::write_markdown_rows(md, m);
    md << "| repetitions | " << in.o.repetitions << " |\n| duration | " << fmt("%.0f", in.seconds)
       << " s |\n\n";
    md << "## Implementations\n\n| implementation | version | placement |\n|---|---|---|\n";
    for (const auto& i : in.impls) {
        std::string version,
            placement = i.name.rfind("blitz", 0) == 0 ? "" : "unpinned (the OS places its threads)";
        for (const auto& d : in.runs) {
            for (const auto& [k, s] : d.s) {
                if (k.second != i.name || !s.seen) continue;
                if (version.empty()) version = s.version;
                if (!s.placement.empty() && placement.find(s.placement) == std::string::npos) {
                    placement += (placement.empty() ? "" : "; ") + std::to_string(d.workers) +
                                 " workers: " + s.placement;
                }
            }
        }
        md << "| " << i.name << " | " << (i.missing.empty() ? version : "not run: " + i.missing)
           << " | " << placement << " |\n";
    }
    md << "\n";
    std::vector<std::string> pngs;
    for (const auto& d : in.runs) {
        write_rows(md, d, in.impls);
        if (!plots_dir.empty()) write_plots(d, in.impls, plots_dir, md, pngs);
    }
    md << "## Targets (issue 7)\n\nRatio targets use the median of the pairwise ratios. The seeds "
          "do not "
          "carry the reference runtime's whole table; the rows with a published ratio are the four "
          "the issue names. The reference measured them as single-threaded fast paths (try_send "
          "into a channel with room; oneshot create, send and try_recv; watch send and borrow; a "
          "barrier of one party made and waited on each time): the rows channel_try_send, "
          "oneshot_try_recv, watch_send_borrow and barrier_new_1 reproduce those definitions, and "
          "the same ratios are also held against this suite's awaiting rows. The reference's "
          "oneshot was a value on the stack: oneshot_cell_try_recv runs the definition with "
          "blitz::oneshot_cell, whose state lives in place, against Tokio's oneshot.\n\n";
    for (const auto& d : in.runs) write_targets(md, d);
    if (!pngs.empty()) {
        md << "## Plots\n\n";
        for (const auto& p : pngs) md << "![" << p << "](" << p << ")\n\n";
    }
    return md.str();
}

void write_json(std::ostream& os, const report_input& in) {
    report::json_writer w(os, /*pretty=*/true);
    w.begin_object().key("machine");
    report::write_json(w, in.machine);
    w.field("command", in.o.command)
        .field("repetitions", in.o.repetitions)
        .field("duration_s", in.seconds)
        .key("results")
        .begin_array();
    for (const auto& d : in.runs) {
        for (const auto& name : d.names) {
            for (const auto& i : in.impls) {
                const series& s = d.s.at({name, i.name});
                w.begin_object()
                    .field("workers", d.workers)
                    .field("workload", name)
                    .field("kind", d.kinds.at(name))
                    .field("implementation", i.name);
                if (!s.seen) {
                    w.field("not_run", s.not_run).end_object();
                    continue;
                }
                const stats st = summarize(s.reps);
                w.field("version", s.version)
                    .field("ops", s.ops)
                    .field("median_ns", std::round(st.median))
                    .field("min_ns", std::round(st.min))
                    .field("max_ns", std::round(st.max))
                    .field("cv", st.cv)
                    .field("ns_per_op", st.median / double(std::max(1L, s.ops)));
                if (s.allocs >= 0)
                    w.field("allocs_per_op", s.allocs).field("bytes_per_op", s.bytes);
                if (const auto r = ratios_for(d, name, i.name); !r.empty()) {
                    w.field("ratio_blitz_over_this", summarize(r).median)
                        .field("ratio_of", reference_for(i.name))
                        .field("pair_ratios", r);
                }
                w.field("reps_ns", s.reps);
                if (!s.samples.empty()) w.field("samples_ns", s.samples);
                w.end_object();
            }
        }
    }
    w.end_array().end_object();
}

std::vector<std::string> summary_header(const report_input& in) {
    std::vector<std::string> h = {"workers", "workload", "blitz median", "ns/op"};
    for (const auto& i : in.impls) {
        if (i.name == "blitz") continue;
        const std::string ref = reference_for(i.name);
        h.push_back(ref == "blitz" ? "vs " + i.name : ref + " vs " + i.name);
    }
    return h;
}

std::vector<std::vector<std::string>> summary_rows(const report_input& in) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : in.runs) {
        for (const auto& name : d.names) {
            const series& b = d.s.at({name, "blitz"});
            std::vector<std::string> row = {
                std::to_string(d.workers), name, b.seen ? dur(summarize(b.reps).median) : "failed",
                b.seen && !d.is_latency(name)
                    ? fmt("%.1f", summarize(b.reps).median / double(std::max(1L, b.ops)))
                    : "-"};
            for (const auto& i : in.impls) {
                if (i.name == "blitz") continue;
                const auto r = ratios_for(d, name, i.name);
                row.push_back(r.empty() ? "-" : fmt("%.2fx", summarize(r).median));
            }
            rows.push_back(std::move(row));
        }
    }
    return rows;
}

}  // namespace blitz::bench
