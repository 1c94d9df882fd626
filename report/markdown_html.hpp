// SPDX-License-Identifier: MIT
#pragma once
// Markdown to HTML for the files blitz writes itself (results/*.md, which `blitz report`
// publishes as one page): headings, paragraphs, pipe tables, fenced code, bullet lists,
// images, links, inline code, bold and italics. Everything else is escaped text; no raw HTML
// passes through.

#include <functional>
#include <string>

namespace blitz::report {

// `link` rewrites each link or image target (relative paths in a results file are relative to
// that file; the page that embeds it lives elsewhere). Headings get ids `prefix` + a slug.
std::string markdown_to_html(const std::string& md,
                             const std::function<std::string(const std::string&)>& link,
                             const std::string& id_prefix = "");

std::string html_escape(const std::string& s);

}  // namespace blitz::report
