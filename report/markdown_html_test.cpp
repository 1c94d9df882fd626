// SPDX-License-Identifier: MIT
#include "markdown_html.hpp"

#include <gtest/gtest.h>

namespace blitz::report {
namespace {

std::string same(const std::string& s) { return s; }

TEST(MarkdownHtml, HeadingsParagraphsAndInlineMarkup) {
    const std::string h = markdown_to_html(
        "# Bench (quick)\n\nA *fast* run with `x<y` and **bold**,\nsecond line.\n", same, "m-");
    EXPECT_NE(h.find("<h1 id=\"m-bench-quick\">Bench (quick)</h1>"), std::string::npos) << h;
    EXPECT_NE(h.find("<p>A <em>fast</em> run with <code>x&lt;y</code> and <strong>bold</strong>,"),
              std::string::npos)
        << h;
}

TEST(MarkdownHtml, TablesCodeListsImagesAndLinks) {
    const std::string md =
        "| field | value |\n|---|---:|\n| a `b|c` | 1 |\n| x | 2 |\n\n"
        "```\n<raw> & kept\n```\n"
        "- one\n  continued\n- two\n\n"
        "![ratios](plots/r.png) and [the doc](docs/x.md)\n";
    const std::string h = markdown_to_html(md, [](const std::string& t) { return "epyc/" + t; });
    EXPECT_NE(h.find("<th>field</th><th>value</th>"), std::string::npos) << h;
    EXPECT_NE(h.find("<td>a <code>b|c</code></td><td>1</td>"), std::string::npos) << h;
    EXPECT_NE(h.find("<pre><code>&lt;raw&gt; &amp; kept\n</code></pre>"), std::string::npos) << h;
    EXPECT_NE(h.find("<li>one continued</li>\n<li>two</li>"), std::string::npos) << h;
    EXPECT_NE(h.find("<img src=\"epyc/plots/r.png\" alt=\"ratios\">"), std::string::npos) << h;
    EXPECT_NE(h.find("<a href=\"epyc/docs/x.md\">the doc</a>"), std::string::npos) << h;
}

TEST(MarkdownHtml, NoRawHtmlPassesThrough) {
    const std::string h = markdown_to_html("<script>alert(1)</script> snake_case_name\n", same);
    EXPECT_EQ(h.find("<script>"), std::string::npos) << h;
    EXPECT_NE(h.find("snake_case_name"), std::string::npos) << h;  // no italics inside words
}

}  // namespace
}  // namespace blitz::report
