// SPDX-License-Identifier: MIT
#include "report_page.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "blitz/version.hpp"
#include "markdown_html.hpp"

namespace blitz::cli {
namespace fs = std::filesystem;
namespace {

const char* const style = R"(<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em 2em; color: #222; }
nav { background: #f5f5f5; padding: .5em 1em; border-radius: 6px; }
nav ul { margin: .2em 0; }
h1 { border-bottom: 2px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
h2, h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13px; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
tr:nth-child(even) td { background: #fafafa; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; font-size: 12px; }
code { font-family: ui-monospace, monospace; font-size: 90%; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
.source { color: #777; font-size: 12px; }
</style>
)";

void report_help() {
    std::cout << "usage: blitz report [--results DIR] [--out FILE|-]\n"
                 "Renders every Markdown table under the results folder (each machine's\n"
                 "conformance, benchmark and I/O reports, with their plots) as one static HTML\n"
                 "page with a table of contents; image and link paths are rewritten relative to\n"
                 "the page, so the folder can be published as is.\n"
                 "  --results DIR  the results folder (default results)\n"
                 "  --out FILE     the page (default DIR/index.html; - for stdout)\n"
                 "exit status: 0 written, 2 a wrong command line or no results to render\n";
}

std::string id_of(const fs::path& rel) {
    std::string s;
    for (char c : rel.generic_string()) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    return s + "-";
}

}  // namespace

int report_main(args& a) {
    std::string results = "results", out;
    while (!a.done()) {
        const std::string f = a.next();
        if (f == "-h" || f == "--help") {
            report_help();
            return 0;
        }
        if (f == "--results") {
            results = a.value();
        } else if (f == "--out") {
            out = a.value();
        } else {
            a.unknown();
        }
    }
    if (!fs::is_directory(results)) {
        throw usage_error("report: --results: '" + results + "' is not a folder");
    }
    if (out.empty()) out = (fs::path(results) / "index.html").string();
    check_output_file("--out", out);
    // The page's folder: image and link targets are made relative to it.
    const fs::path page_dir =
        out == "-" ? fs::path(results) : fs::absolute(fs::path(out)).parent_path();
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(results)) {
        if (e.is_regular_file() && e.path().extension() == ".md") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw usage_error("report: no *.md under '" + results + "'");

    std::ostringstream body, toc;
    std::string machine;
    toc << "<nav><strong>Contents</strong>\n";
    for (const fs::path& f : files) {
        const fs::path rel = fs::relative(f, results);
        const std::string m = rel.begin()->string();
        if (m != machine) {
            toc << (machine.empty() ? "" : "</ul>\n") << "<div>" << report::html_escape(m)
                << "</div><ul>\n";
            machine = m;
        }
        std::ifstream in(f);
        std::stringstream text;
        text << in.rdbuf();
        const fs::path dir = fs::absolute(f).parent_path();
        auto link = [&](const std::string& target) {
            if (target.find("://") != std::string::npos || target.rfind('#', 0) == 0) {
                return target;
            }
            return fs::relative(dir / target, page_dir).generic_string();
        };
        const std::string id = id_of(rel);
        toc << "<li><a href=\"#" << id << "\">" << report::html_escape(rel.generic_string())
            << "</a></li>\n";
        body << "<section id=\"" << id << "\">\n<p class=\"source\">"
             << report::html_escape(rel.generic_string()) << "</p>\n"
             << report::markdown_to_html(text.str(), link, id) << "</section>\n";
    }
    toc << "</ul>\n</nav>\n";
    std::ostringstream page;
    page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         << "<title>blitz results</title>\n"
         << style << "</head>\n<body>\n<h1>blitz results</h1>\n<p>Every table under <code>"
         << report::html_escape(results) << "</code>, rendered by blitz " << BLITZ_VERSION_STRING
         << ". Each file starts with the record of the machine and commit it came from.</p>\n"
         << toc.str() << body.str() << "</body>\n</html>\n";
    if (out == "-") {
        std::cout << page.str();
    } else {
        std::ofstream(out) << page.str();
        std::cerr << "report: wrote " << out << " (" << files.size() << " files)\n";
    }
    return 0;
}

}  // namespace blitz::cli
