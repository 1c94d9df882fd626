// SPDX-License-Identifier: MIT
#include "harness.hpp"

#include <hwloc.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "blitz/topology.hpp"
#include "checker.hpp"
#include "blitz_testing/suite.hpp"
#include "table.hpp"
#include "topo/machine.hpp"

namespace blitz::conformance {
namespace {

std::string run_command(const char* cmd) {
    std::string out;
    if (FILE* f = popen(cmd, "r")) {
        char buf[256];
        while (fgets(buf, sizeof buf, f)) out += buf;
        pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    }
    return "unknown";
}

std::string compiler() {
#if defined(__clang__)
    return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("g++ ") + __VERSION__;
#else
    return "unknown";
#endif
}


// The machine's topology as hwloc sees it: a one-line summary and the XML export.
struct topology_record {
    std::string summary = "unknown";
    std::string xml;
};

topology_record read_topology() {
    topology_record r;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return r;
    if (hwloc_topology_load(topo) == 0) {
        auto count = [&](hwloc_obj_type_t t) { return hwloc_get_nbobjs_by_type(topo, t); };
        r.summary = std::to_string(count(HWLOC_OBJ_PACKAGE)) + " package(s), " +
                    std::to_string(count(HWLOC_OBJ_NUMANODE)) + " NUMA node(s), " +
                    std::to_string(count(HWLOC_OBJ_CORE)) + " core(s), " +
                    std::to_string(count(HWLOC_OBJ_PU)) + " PU(s)";
        char* buf = nullptr;
        int len = 0;
        if (hwloc_topology_export_xmlbuffer(topo, &buf, &len, 0) == 0 && buf) {
            r.xml.assign(buf, len > 0 ? static_cast<std::size_t>(len - 1) : 0);
            hwloc_free_xmlbuffer(topo, buf);
        }
    }
    hwloc_topology_destroy(topo);
    return r;
}

struct row {
    const checker* c;
    outcome total;
    outcome control;
    bool caught = false;
    bool pass = false;
    bool applicable = false;  // some config could exercise the invariant
    double seconds = 0;
};

}  // namespace

std::string machine_id() {
    std::string model = cpu_model();
    for (const char* mark : {"(R)", "(r)", "(TM)", "(tm)"}) {
        for (auto pos = model.find(mark); pos != std::string::npos; pos = model.find(mark)) {
            model.erase(pos, std::strlen(mark));
        }
    }
    std::string word;
    std::istringstream in(model);
    for (std::string t; in >> t;) {
        std::string w;
        for (char ch : t) {
            if (std::isalnum(static_cast<unsigned char>(ch))) w += static_cast<char>(std::tolower(ch));
        }
        if (w.size() >= 3 && w != "intel" && w != "amd" && w != "processor" && w != "cpu" &&
            w.find("core") != 0) {
            word = w;
            break;
        }
    }
    if (word.empty()) word = "cpu";
    std::string id = word + "-" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + "c";
    std::string hv = run_command("lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[[:space:]]*//p'");
    for (auto& ch : hv) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!hv.empty()) id += "-" + hv;
    return id;
}

machine_record read_machine_record() {
    machine_record m;
    m.id = machine_id();
    m.cpu = cpu_model();
    m.logical_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const topology_record t = read_topology();
    m.topology = t.summary;
    m.topology_xml = t.xml;
    utsname u{};
    uname(&u);
    m.kernel = std::string(u.sysname) + " " + u.release;
    m.compiler = compiler();
    m.build_flags = BLITZ_BUILD_FLAGS;
    m.commit = run_command("git rev-parse --short HEAD 2>/dev/null");
    if (m.commit.empty()) m.commit = "unknown";
    m.hypervisor = run_command("lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[[:space:]]*//p'");
    if (m.hypervisor.empty()) m.hypervisor = "none";
    return m;
}

namespace {

// Ends the process when one checker run exceeds its limit: a hang (a lost wakeup with nothing
// left to rescue it, a deadlock) is a forbidden outcome, reported rather than waited out.
class watchdog {
public:
    explicit watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { loop(); }) {}
    ~watchdog() {
        {
            std::lock_guard<std::mutex> l(mu_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void arm(std::string what) {
        std::lock_guard<std::mutex> l(mu_);
        what_ = std::move(what);
        deadline_ = std::chrono::steady_clock::now() + limit_;
    }

private:
    void loop() {
        std::unique_lock<std::mutex> l(mu_);
        while (!done_) {
            cv_.wait_for(l, std::chrono::seconds(1));
            if (!done_ && !what_.empty() && std::chrono::steady_clock::now() > deadline_) {
                std::cerr << "\n[conformance] FORBIDDEN: " << what_ << " did not finish within "
                          << limit_.count() << " s (a hang: lost wakeup or deadlock)\n";
                std::_Exit(3);
            }
        }
    }
    std::chrono::seconds limit_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::string what_;
    std::chrono::steady_clock::time_point deadline_{};
    std::thread thread_;
};

// The shipped shapes (conformance/topologies/*.synth and *.xml), sorted by name.
std::vector<std::string> shipped_topologies() {
    std::vector<std::string> r;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(BLITZ_TOPOLOGY_DIR, ec)) {
        const std::string ext = e.path().extension().string();
        if (ext == ".synth" || ext == ".xml") r.push_back(e.path().string());
    }
    if (r.empty()) {
        // Installed without the source tree: the two shapes the N checkers must cover.
        r = {"pack:2 numa:2 core:8 pu:2", "pack:1 numa:4 core:16 pu:1"};
    }
    std::sort(r.begin(), r.end());
    return r;
}

std::string topology_label(const std::string& t) {
    if (t.empty()) return "this machine";
    return std::filesystem::path(t).filename().string();
}

}  // namespace

int run_harness(const harness_options& o) {
    const auto started = std::chrono::steady_clock::now();
    for (const std::string& id : o.filter) {
        const auto& all = all_checkers();
        if (std::none_of(all.begin(), all.end(), [&](const checker& c) { return c.id == id; })) {
            std::string known;
            for (const checker& c : all) known += " " + c.id;
            throw std::invalid_argument("--filter: no checker for '" + id + "'; known:" + known);
        }
    }
    const std::vector<std::string> shapes = o.topologies.empty() ? shipped_topologies() : o.topologies;
    std::vector<std::string> topologies{""};  // this machine first
    for (const auto& t : shapes) {
        detail::topo::load_machine(t);  // a bad --topology fails here, before any checker runs
        topologies.push_back(t);
    }
    const unsigned max_pinned = static_cast<unsigned>(detail::topo::load_machine("").pus.size());
    watchdog dog(std::chrono::seconds(o.quick ? 600 : 3600));
    std::vector<row> rows;
    for (const checker& c : all_checkers()) {
        if (!o.filter.empty() &&
            std::find(o.filter.begin(), o.filter.end(), c.id) == o.filter.end()) {
            continue;
        }
        row r{&c, {}, {}};
        const auto row_started = std::chrono::steady_clock::now();
        auto one = [&](const run_params& p, const std::string& label) {
            std::cerr << "\r[conformance] " << c.id << " " << label << "            " << std::flush;
            dog.arm(c.id + " " + label);
            outcome x = c.run(p, /*faulty=*/false);
            if (!x.applicable) return;
            r.applicable = true;
            r.total.runs += x.runs;
            r.total.events += x.events;
            r.total.violations += x.violations;
            r.total.interesting += x.interesting;
            if (r.total.detail.empty()) r.total.detail = x.detail;
            if (!x.note.empty()) {
                r.total.note += (r.total.note.empty() ? "" : "; ") + label + ": " + x.note;
            }
        };
        if (c.per_topology) {
            current_placement() = suite_placement{};
            for (const std::string& t : topologies) {
                for (unsigned w : o.workers) {
                    one(run_params{w, o.seed, o.quick, t}, topology_label(t) + " W=" + std::to_string(w));
                }
            }
        } else {
            for (placement_policy pol : o.policies) {
                current_placement() = suite_placement{pol, max_pinned};
                for (unsigned w : o.workers) {
                    if (pol != placement_policy::none && w > max_pinned) continue;
                    one(run_params{w, o.seed, o.quick, {}},
                        (pol == placement_policy::none ? std::string() : to_string(pol) + std::string(" ")) +
                            "W=" + std::to_string(w));
                }
            }
            current_placement() = suite_placement{};
        }
        if (!r.applicable) {
            // E.g. Q7 with at most two workers: nothing to check, and nothing to catch. Shown as
            // n/a; it neither passes nor fails the run.
            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - row_started).count();
            rows.push_back(std::move(r));
            continue;
        }
        std::cerr << "\r[conformance] " << c.id << " negative control      " << std::flush;
        // Controls run unpinned with at least 4 workers: some faults (e.g. I2's) need 3 to show.
        const unsigned cw = std::max(4u, o.workers.empty() ? 4u : o.workers.back());
        if (c.per_topology) {
            // Caught on every topology where the fault can show, and it must show somewhere.
            unsigned applicable = 0, caught = 0;
            for (const std::string& t : topologies) {
                dog.arm(c.id + " negative control on " + topology_label(t));
                outcome x = c.run(run_params{cw, o.seed, o.quick, t}, /*faulty=*/true);
                if (!x.applicable) continue;
                ++applicable;
                if (x.violations > 0) ++caught;
                r.control.violations += x.violations;
                if (x.violations == 0 && r.control.detail.empty()) {
                    r.control.detail = "not caught on " + topology_label(t);
                }
            }
            r.caught = applicable > 0 && caught == applicable;
            if (applicable == 0) r.control.detail = "the fault could not show on any topology";
        } else {
            dog.arm(c.id + " negative control");
            r.control = c.run(run_params{cw, o.seed, o.quick, {}}, /*faulty=*/true);
            r.caught = r.control.violations > 0;
        }
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - row_started).count();
        r.pass = r.total.violations == 0 && r.total.events > 0 && r.caught;
        rows.push_back(std::move(r));
    }
    std::cerr << "\r" << std::string(60, ' ') << "\r";
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    cli::table t({"id", "property", "runs", "events", "violations", "interesting", "control caught",
                  "s", "verdict"});
    bool all_pass = std::any_of(rows.begin(), rows.end(), [](const row& r) { return r.applicable; });
    for (const row& r : rows) {
        if (!r.applicable) continue;
        all_pass = all_pass && r.pass;
        t.add({r.c->id, r.c->statement, std::to_string(r.total.runs),
               std::to_string(r.total.events), std::to_string(r.total.violations),
               std::to_string(r.total.interesting),
               !r.applicable ? "-" : r.caught ? "yes (" + std::to_string(r.control.violations) + ")" : "NO",
               std::to_string(static_cast<int>(r.seconds + 0.5)),
               !r.applicable ? "n/a" : r.pass ? "PASS" : "FAIL"});
    }
    std::ostringstream table_text;
    t.print(table_text);
    std::cout << table_text.str();
    std::ostringstream notes;
    for (const row& r : rows) {
        if (!r.total.detail.empty()) notes << r.c->id << ": " << r.total.detail << "\n";
        if (!r.total.note.empty()) notes << r.c->id << " (measured): " << r.total.note << "\n";
        if (!r.applicable) notes << r.c->id << ": not applicable with these worker counts\n";
        if (r.applicable && !r.caught && !r.control.detail.empty()) {
            notes << r.c->id << " control: " << r.control.detail << "\n";
        }
    }
    std::cout << notes.str();
    const auto not_applicable =
        std::count_if(rows.begin(), rows.end(), [](const row& r) { return !r.applicable; });
    std::cout << (all_pass ? "all applicable checkers passed, every negative control caught"
                           : "FAILED: a forbidden outcome, an empty check or an uncaught control")
              << (not_applicable ? " (" + std::to_string(not_applicable) + " not applicable)" : "")
              << " (" << secs << " s)\nreproduce: " << o.command << "\n";

    if (!o.out_dir.empty()) {
        std::filesystem::create_directories(o.out_dir);
        utsname u{};
        uname(&u);
        const std::string commit = run_command("git rev-parse --short HEAD 2>/dev/null");
        std::ostringstream workers;
        for (std::size_t i = 0; i < o.workers.size(); ++i) workers << (i ? "," : "") << o.workers[i];
        std::string placement_text, topo_text = "this machine";
        for (placement_policy pol : o.policies) {
            if (!placement_text.empty()) placement_text += "; ";
            if (pol == placement_policy::none) {
                placement_text += "unpinned (policy none) for every worker count";
                continue;
            }
            config pc;
            pc.topology.policy = pol;
            const unsigned most = std::min(max_pinned, *std::max_element(o.workers.begin(), o.workers.end()));
            placement_text += "pinned W<=" + std::to_string(most) +
                              " (each worker binds itself at start; N1 checks it): " +
                              plan_placement(pc, most).summary();
        }
        for (std::size_t i = 1; i < topologies.size(); ++i) topo_text += ", " + topology_label(topologies[i]);
        const topology_record topo = read_topology();
        if (!topo.xml.empty()) std::ofstream(o.out_dir + "/topology.xml") << topo.xml;
        std::ofstream md(o.out_dir + "/conformance.md");
        md << "# Conformance (" << (o.quick ? "quick" : "full") << ")\n\n"
           << "| field | value |\n|---|---|\n"
           << "| machine | " << machine_id() << " |\n| CPU | " << cpu_model() << " |\n"
           << "| logical CPUs | " << sysconf(_SC_NPROCESSORS_ONLN) << " |\n"
           << "| topology (hwloc) | " << topo.summary << "; XML export in topology.xml |\n"
           << "| kernel | " << u.sysname << " " << u.release << " |\n"
           << "| compiler | " << compiler() << " |\n| build flags | " << BLITZ_BUILD_FLAGS
           << " |\n| commit | " << (commit.empty() ? "unknown" : commit) << " |\n"
           << "| seed | " << o.seed << " |\n| workers | " << workers.str() << " |\n"
           << "| placement | " << placement_text << " |\n"
           << "| topologies (N checkers) | " << topo_text << " |\n"
           << "| duration | " << secs << " s |\n| command | `" << o.command << "` |\n\n```\n"
           << table_text.str() << "```\n\n"
           << "Rows: runs = workload rounds over all worker configs; events = probe events, "
              "operations or outcomes checked; interesting = acceptable outcomes worth reporting "
              "(e.g. a transient searcher overshoot); control caught = violations the checker "
              "reported under its negative control.\n\n"
           << "Notes:\n\n```\n" << notes.str() << "```\n";
        std::ofstream js(o.out_dir + "/conformance.json");
        js << "{\n  \"machine\": \"" << machine_id() << "\",\n  \"cpu\": \"" << json_escape(cpu_model())
           << "\",\n  \"topology\": \"" << json_escape(topo.summary)
           << "\",\n  \"topology_xml\": \"topology.xml\",\n  \"placement\": \"" << json_escape(placement_text)
           << "\",\n  \"topologies\": \"" << json_escape(topo_text) << "\",\n  \"kernel\": \"" << u.release << "\",\n  \"compiler\": \""
           << json_escape(compiler()) << "\",\n  \"commit\": \"" << commit << "\",\n  \"seed\": "
           << o.seed << ",\n  \"mode\": \"" << (o.quick ? "quick" : "full")
           << "\",\n  \"duration_s\": " << secs << ",\n  \"checkers\": [\n";
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const row& r = rows[i];
            js << "    {\"id\": \"" << r.c->id << "\", \"property\": \"" << json_escape(r.c->statement)
               << "\", \"runs\": " << r.total.runs << ", \"events\": " << r.total.events
               << ", \"violations\": " << r.total.violations << ", \"interesting\": "
               << r.total.interesting << ", \"note\": \"" << json_escape(r.total.note)
               << "\", \"control\": \"" << json_escape(r.c->control)
               << "\", \"control_violations\": " << r.control.violations << ", \"verdict\": \""
               << (!r.applicable ? "n/a" : r.pass ? "pass" : "fail") << "\"}" << (i + 1 < rows.size() ? "," : "") << "\n";
        }
        js << "  ]\n}\n";
        std::cout << "wrote " << o.out_dir << "/conformance.md and conformance.json\n";
    }
    return all_pass ? 0 : 1;
}

}  // namespace blitz::conformance
