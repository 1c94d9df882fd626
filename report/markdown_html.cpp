// SPDX-License-Identifier: MIT
#include "markdown_html.hpp"

#include <cctype>
#include <sstream>
#include <vector>

namespace blitz::report {

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

namespace {

using linker = std::function<std::string(const std::string&)>;

// Inline markup: `code`, **bold**, *italic* or _italic_ (at word starts), ![alt](src), [t](u).
std::string inline_html(const std::string& s, const linker& link) {
    std::string out;
    std::size_t i = 0;
    auto closing = [&](const std::string& mark, std::size_t from) { return s.find(mark, from); };
    while (i < s.size()) {
        const char c = s[i];
        if (c == '`') {
            const auto e = closing("`", i + 1);
            if (e != std::string::npos) {
                out += "<code>" + html_escape(s.substr(i + 1, e - i - 1)) + "</code>";
                i = e + 1;
                continue;
            }
        }
        if (c == '*' && i + 1 < s.size() && s[i + 1] == '*') {
            const auto e = closing("**", i + 2);
            if (e != std::string::npos && e > i + 2) {
                out += "<strong>" + inline_html(s.substr(i + 2, e - i - 2), link) + "</strong>";
                i = e + 2;
                continue;
            }
        }
        const bool word_start = i == 0 || !std::isalnum(static_cast<unsigned char>(s[i - 1]));
        if ((c == '*' || c == '_') && word_start && i + 1 < s.size() && s[i + 1] != ' ') {
            const auto e = closing(std::string(1, c), i + 1);
            const bool word_end =
                e != std::string::npos &&
                (e + 1 >= s.size() || !std::isalnum(static_cast<unsigned char>(s[e + 1])));
            if (e != std::string::npos && e > i + 1 && word_end) {
                out += "<em>" + inline_html(s.substr(i + 1, e - i - 1), link) + "</em>";
                i = e + 1;
                continue;
            }
        }
        const bool image = c == '!' && i + 1 < s.size() && s[i + 1] == '[';
        if (c == '[' || image) {
            const std::size_t open = image ? i + 1 : i;
            const auto close = s.find("](", open);
            const auto end = close == std::string::npos ? close : s.find(')', close + 2);
            if (close != std::string::npos && end != std::string::npos &&
                s.find('\n', open) > end) {
                const std::string text = s.substr(open + 1, close - open - 1);
                const std::string target = link(s.substr(close + 2, end - close - 2));
                if (image) {
                    out += "<img src=\"" + html_escape(target) + "\" alt=\"" + html_escape(text) +
                           "\">";
                } else {
                    out += "<a href=\"" + html_escape(target) + "\">" + inline_html(text, link) +
                           "</a>";
                }
                i = end + 1;
                continue;
            }
        }
        out += html_escape(std::string(1, c));
        ++i;
    }
    return out;
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> cells(const std::string& row) {
    std::string r = trim(row);
    if (!r.empty() && r.front() == '|') r.erase(0, 1);
    if (!r.empty() && r.back() == '|') r.pop_back();
    std::vector<std::string> out;
    std::string cur;
    bool code = false;
    for (char c : r) {
        if (c == '`') code = !code;
        if (c == '|' && !code) {
            out.push_back(trim(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(trim(cur));
    return out;
}

bool is_rule(const std::string& row) {
    const std::string r = trim(row);
    if (r.empty() || r[0] != '|') return false;
    for (char c : r) {
        if (c != '|' && c != '-' && c != ':' && c != ' ') return false;
    }
    return true;
}

std::string slug(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        } else if (!out.empty() && out.back() != '-') {
            out += '-';
        }
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

}  // namespace

std::string markdown_to_html(const std::string& md, const linker& link,
                             const std::string& id_prefix) {
    std::vector<std::string> lines;
    std::istringstream in(md);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::string out, para;
    auto flush_para = [&] {
        if (!trim(para).empty()) out += "<p>" + inline_html(trim(para), link) + "</p>\n";
        para.clear();
    };
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& l = lines[i];
        const std::string t = trim(l);
        if (t.rfind("```", 0) == 0) {  // fenced code, kept verbatim
            flush_para();
            out += "<pre><code>";
            for (++i; i < lines.size() && trim(lines[i]).rfind("```", 0) != 0; ++i) {
                out += html_escape(lines[i]) + "\n";
            }
            out += "</code></pre>\n";
            continue;
        }
        if (t.empty()) {
            flush_para();
            continue;
        }
        if (t[0] == '#') {
            flush_para();
            std::size_t level = 0;
            while (level < t.size() && t[level] == '#') ++level;
            const std::string text = trim(t.substr(level));
            const std::string h = std::to_string(std::min<std::size_t>(level, 6));
            out += "<h" + h + " id=\"" + id_prefix + slug(text) + "\">" + inline_html(text, link) +
                   "</h" + h + ">\n";
            continue;
        }
        if (t[0] == '|' && i + 1 < lines.size() && is_rule(lines[i + 1])) {
            flush_para();
            out += "<table>\n<thead><tr>";
            for (const auto& c : cells(l)) out += "<th>" + inline_html(c, link) + "</th>";
            out += "</tr></thead>\n<tbody>\n";
            for (i += 2; i < lines.size() && trim(lines[i]).rfind('|', 0) == 0; ++i) {
                out += "<tr>";
                for (const auto& c : cells(lines[i]))
                    out += "<td>" + inline_html(c, link) + "</td>";
                out += "</tr>\n";
            }
            --i;
            out += "</tbody>\n</table>\n";
            continue;
        }
        if (t.rfind("- ", 0) == 0 || t.rfind("* ", 0) == 0) {
            flush_para();
            out += "<ul>\n";
            std::string item = t.substr(2);
            for (++i; i <= lines.size(); ++i) {
                const std::string n = i < lines.size() ? trim(lines[i]) : "";
                const bool next_item = n.rfind("- ", 0) == 0 || n.rfind("* ", 0) == 0;
                const bool continuation = !n.empty() && !next_item && i < lines.size() &&
                                          (lines[i][0] == ' ' || lines[i][0] == '\t');
                if (continuation) {
                    item += " " + n;
                    continue;
                }
                out += "<li>" + inline_html(item, link) + "</li>\n";
                if (!next_item) break;
                item = n.substr(2);
            }
            --i;
            out += "</ul>\n";
            continue;
        }
        para += l + "\n";
    }
    flush_para();
    return out;
}

}  // namespace blitz::report
