// SPDX-License-Identifier: MIT
// The harness's reporting half: the table and notes on stdout, conformance.md and
// conformance.json (through the one JSON writer) and topology.xml in the output folder.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "blitz/topology.hpp"
#include "blitz_testing/suite.hpp"
#include "harness.hpp"
#include "json_writer.hpp"
#include "machine_record.hpp"
#include "machine_record_io.hpp"
#include "markdown_html.hpp"
#include "table.hpp"

namespace blitz::conformance {
namespace {

// What the placement passes pinned, for the report's header.
std::string placement_text(const harness_options& o, unsigned max_pinned) {
    std::string text;
    for (placement_policy pol : o.policies) {
        if (!text.empty()) text += "; ";
        if (pol == placement_policy::none) {
            text += "unpinned (policy none) for every worker count";
            continue;
        }
        config pc;
        pc.topology.policy = pol;
        pc.topology.source = o.place_on;
        const unsigned most =
            std::min(max_pinned, *std::max_element(o.workers.begin(), o.workers.end()));
        text += "pinned W<=" + std::to_string(most) +
                (o.place_on.empty()
                     ? std::string(" (each worker binds itself at start; N1 checks it): ")
                     : " placed on " + topology_label(o.place_on) + " (nothing bound): ") +
                plan_placement(pc, most).summary();
    }
    return text;
}

// Everything a report says about the run besides the rows.
struct run_header {
    report::machine_record m;
    std::string workers, topologies, placed;
};

run_header header_of(const harness_options& o, const suite_run& run) {
    run_header h;
    h.m = run.machine;
    std::ostringstream workers;
    for (std::size_t i = 0; i < o.workers.size(); ++i) workers << (i ? "," : "") << o.workers[i];
    h.workers = workers.str();
    h.topologies = "this machine";
    for (std::size_t i = 1; i < run.topologies.size(); ++i) {
        h.topologies += ", " + topology_label(run.topologies[i]);
    }
    h.placed = placement_text(o, run.max_pinned);
    return h;
}

void write_markdown(std::ostream& md, const harness_options& o, const suite_run& run,
                    const run_header& h, const std::string& table_text, const std::string& notes) {
    md << "# Conformance (" << (o.quick ? "quick" : "full") << ")\n\n"
       << "| field | value |\n|---|---|\n";
    report::write_markdown_rows(md, h.m);
    md << "| seed | " << o.seed << " |\n| workers | " << h.workers << " |\n"
       << "| placement | " << h.placed << " |\n"
       << "| topologies (N checkers) | " << h.topologies << " |\n"
       << "| duration | " << run.seconds << " s |\n| command | `" << o.command << "` |\n\n```\n"
       << table_text << "```\n\n"
       << "Rows: runs = workload rounds over all worker configs; events = probe events, "
          "operations or outcomes checked; interesting = acceptable outcomes worth reporting "
          "(e.g. a transient searcher overshoot); control caught = violations the checker "
          "reported under its negative control (n/a here: the control cannot show on this "
          "machine, e.g. it breaks io_uring where io_uring is unavailable; see the notes).\n\n"
       << "Notes:\n\n```\n"
       << notes << "```\n";
}

void write_json(std::ostream& js, const harness_options& o, const suite_run& run,
                const run_header& h, bool topology_file) {
    report::json_writer w(js, /*pretty=*/true);
    w.begin_object().key("machine");
    report::write_json(w, h.m);
    w.field("topology_xml", topology_file && !h.m.topology_xml.empty() ? "topology.xml" : "")
        .field("placement", h.placed)
        .field("topologies", h.topologies)
        .field("seed", static_cast<unsigned long long>(o.seed))
        .field("mode", o.quick ? "quick" : "full")
        .field("duration_s", run.seconds)
        .field("command", o.command)
        .field("pass", run.all_pass())
        .key("checkers")
        .begin_array();
    for (const checker_row& r : run.rows) {
        w.begin_object()
            .field("id", r.c->id)
            .field("property", r.c->statement)
            .field("runs", r.total.runs)
            .field("events", r.total.events)
            .field("violations", r.total.violations)
            .field("interesting", r.total.interesting)
            .field("first_violation", r.total.detail)
            .field("note", r.total.note)
            .field("control", r.c->control)
            .field("control_violations", r.control.violations)
            .field("control_applicable", !r.control_na)
            .field("verdict", !r.applicable ? "n/a"
                              : r.pass      ? "pass"
                                            : "fail")
            .end_object();
    }
    w.end_array().end_object();
    js << "\n";
}

// Text for XML attributes and elements: HTML's escapes, and no control characters (XML 1.0
// allows none but tab, newline and return).
std::string xml_escape(std::string s) {
    for (char& c : s) {
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') c = ' ';
    }
    return report::html_escape(s);
}

// JUnit XML as Jenkins, GitLab and GitHub's test reporters read it: one testsuite per checker,
// one testcase per configuration and one for the negative control; a failed case carries the
// first violation (or, for a control, that the fault went unnoticed).
// A configuration's test case fails on a violation; a negative control's fails without one.
bool junit_failed(const config_outcome& c) {
    return c.control ? c.o.violations == 0 : c.o.violations > 0;
}

void write_junit(std::ostream& x, const suite_run& run) {
    std::size_t tests = 0, failures = 0;
    for (const checker_row& r : run.rows) {
        for (const config_outcome& c : r.configs) {
            ++tests;
            failures += junit_failed(c);
        }
    }
    x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"blitz conformance\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" time=\"" << run.seconds << "\">\n";
    for (const checker_row& r : run.rows) {
        std::size_t f = 0;
        double secs = 0;
        for (const config_outcome& c : r.configs) {
            f += junit_failed(c);
            secs += c.seconds;
        }
        x << "  <testsuite name=\"conformance." << xml_escape(r.c->id) << "\" tests=\""
          << r.configs.size() << "\" failures=\"" << f << "\" skipped=\"0\" time=\"" << secs
          << "\">\n";
        if (r.configs.empty()) {
            x << "    <!-- not applicable: "
              << xml_escape(r.na_reason.empty() ? "with these worker counts" : r.na_reason)
              << " -->\n";
        }
        for (const config_outcome& c : r.configs) {
            x << "    <testcase classname=\"conformance." << xml_escape(r.c->id) << "\" name=\""
              << xml_escape(c.label) << "\" time=\"" << c.seconds << "\"";
            const bool failed = junit_failed(c);
            if (!failed) {
                x << "/>\n";
                continue;
            }
            const std::string msg =
                c.control ? "negative control not caught (" + r.c->control + ")"
                          : std::to_string(c.o.violations) + " violation(s): " + c.o.detail;
            x << ">\n      <failure message=\"" << xml_escape(msg) << "\" type=\""
              << (c.control ? "uncaught-control" : "violation") << "\">"
              << xml_escape(r.c->statement) << "</failure>\n    </testcase>\n";
        }
        x << "  </testsuite>\n";
    }
    x << "</testsuites>\n";
}

void write_outputs(const harness_options& o, const suite_run& run, const std::string& table_text,
                   const std::string& notes, std::ostream& human) {
    if (o.out_dir.empty() && o.junit.empty() && !o.json_stdout) return;
    const run_header h = header_of(o, run);
    if (o.out_dir == "-") {
        write_markdown(std::cout, o, run, h, table_text, notes);
    } else if (!o.out_dir.empty()) {
        std::filesystem::create_directories(o.out_dir);
        if (!h.m.topology_xml.empty())
            std::ofstream(o.out_dir + "/topology.xml") << h.m.topology_xml;
        std::ofstream md(o.out_dir + "/conformance.md");
        write_markdown(md, o, run, h, table_text, notes);
        std::ofstream js(o.out_dir + "/conformance.json");
        write_json(js, o, run, h, true);
        human << "wrote " << o.out_dir << "/conformance.md and conformance.json\n";
    }
    if (o.json_stdout) write_json(std::cout, o, run, h, false);
    if (o.junit == "-") {
        write_junit(std::cout, run);
    } else if (!o.junit.empty()) {
        std::ofstream x(o.junit);
        write_junit(x, run);
        human << "wrote " << o.junit << " (JUnit)\n";
    }
}

}  // namespace

int report_run(const harness_options& o, const suite_run& run) {
    cli::table t({"id", "property", "runs", "events", "violations", "interesting", "control caught",
                  "s", "verdict"});
    for (const checker_row& r : run.rows) {
        if (!r.applicable) continue;
        t.add({r.c->id, r.c->statement, std::to_string(r.total.runs),
               std::to_string(r.total.events), std::to_string(r.total.violations),
               std::to_string(r.total.interesting),
               r.control_na ? "n/a here"
               : r.caught   ? "yes (" + std::to_string(r.control.violations) + ")"
                            : "NO",
               std::to_string(static_cast<int>(r.seconds + 0.5)), r.pass ? "PASS" : "FAIL"});
    }
    // stdout belongs to a machine-readable output when one was asked for there.
    std::ostream& human =
        o.json_stdout || o.junit == "-" || o.out_dir == "-" ? std::cerr : std::cout;
    // The failing rows are named first and on the last line: a CI log may keep only the head of
    // a failing test's output (ctest -j prints it whole in the middle of the log) or only its tail.
    std::string failed;
    for (const checker_row& r : run.rows) {
        if (!r.applicable || r.pass) continue;
        failed += (failed.empty() ? "" : ", ") + r.c->id + " (";
        if (r.total.violations) failed += std::to_string(r.total.violations) + " violations";
        if (r.total.violations && !r.caught) failed += "; ";
        if (!r.caught) failed += "control not caught";
        if (r.total.violations == 0 && r.caught) failed += "empty check";
        failed += ")";
    }
    if (!failed.empty()) {
        human << "FAILED: " << failed << "\n";
        for (const checker_row& r : run.rows) {
            if (!r.applicable || r.pass) continue;
            if (!r.total.detail.empty()) human << "  " << r.c->id << ": " << r.total.detail << "\n";
            if (!r.caught && !r.control.detail.empty()) {
                human << "  " << r.c->id << " control: " << r.control.detail << "\n";
            }
        }
    }
    std::ostringstream table_text;
    t.print(table_text);
    human << table_text.str();
    std::ostringstream notes;
    for (const checker_row& r : run.rows) {
        if (!r.total.detail.empty()) notes << r.c->id << ": " << r.total.detail << "\n";
        if (!r.total.note.empty()) notes << r.c->id << " (measured): " << r.total.note << "\n";
        if (!r.applicable) {
            notes << r.c->id << ": not applicable "
                  << (r.na_reason.empty() ? "with these worker counts" : "here: " + r.na_reason)
                  << "\n";
        }
        if (r.control_na) notes << r.c->id << " control: not run here: " << r.control.note << "\n";
        if (r.applicable && !r.caught && !r.control.detail.empty()) {
            notes << r.c->id << " control: " << r.control.detail << "\n";
        }
    }
    human << notes.str();
    const bool all_pass = run.all_pass();
    const auto not_applicable = std::count_if(run.rows.begin(), run.rows.end(),
                                              [](const checker_row& r) { return !r.applicable; });
    const auto controls_na = std::count_if(run.rows.begin(), run.rows.end(),
                                           [](const checker_row& r) { return r.control_na; });
    human << (all_pass
                  ? "all applicable checkers passed, every negative control caught" +
                        (controls_na ? " or n/a here (" + std::to_string(controls_na) + ")"
                                     : std::string())
                  : "FAILED: a forbidden outcome, an empty check or an uncaught control: " + failed)
          << (not_applicable ? " (" + std::to_string(not_applicable) + " not applicable)" : "")
          << (run.not_run
                  ? " (stopped after a hang: " + std::to_string(run.not_run) + " checkers not run)"
                  : "")
          << " (" << run.seconds << " s)\nreproduce: " << o.command << "\n";
    write_outputs(o, run, table_text.str(), notes.str(), human);
    return all_pass ? 0 : 1;
}

}  // namespace blitz::conformance
