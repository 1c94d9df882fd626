// SPDX-License-Identifier: MIT
#include "json_reader.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "json_writer.hpp"

namespace blitz::report {
namespace {

TEST(JsonReader, ReadsWhatTheWriterWrites) {
    std::ostringstream os;
    json_writer w(os, /*pretty=*/true);
    w.begin_object()
        .field("id", "Q1 \"quoted\"\n\ttab")
        .field("runs", 3)
        .field("ratio", -0.5e-3)
        .field("ok", true)
        .key("reps")
        .value(std::vector<double>{1, 2.25})
        .key("none")
        .null()
        .end_object();
    const json_value v = json_value::parse(os.str());
    EXPECT_EQ(v.find("id")->string(), "Q1 \"quoted\"\n\ttab");
    EXPECT_EQ(v.find("runs")->number(), 3);
    EXPECT_DOUBLE_EQ(v.find("ratio")->number(), -0.5e-3);
    EXPECT_TRUE(v.find("ok")->boolean());
    ASSERT_EQ(v.find("reps")->array().size(), 2u);
    EXPECT_EQ(v.find("reps")->array()[1].number(), 2.25);
    EXPECT_TRUE(v.find("none")->is_null());
    EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(JsonReader, EscapesAndNesting) {
    const json_value v = json_value::parse(R"( [ {"a": [[], {}]}, "\u00e9\u20ac\/" ] )");
    ASSERT_TRUE(v.is_array());
    EXPECT_TRUE(v.array()[0].find("a")->array()[1].object().empty());
    EXPECT_EQ(v.array()[1].string(), "\xC3\xA9\xE2\x82\xAC/");
}

TEST(JsonReader, RejectsMalformedInputWithItsOffset) {
    for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "\"open", "01x", "[1] 2", "tru",
                            "\"\\q\"", "-", "1.", "{\"a\":1,}"}) {
        EXPECT_THROW(json_value::parse(bad), json_error) << bad;
    }
    try {
        (void)json_value::parse("[1, 2, ?]");
        FAIL();
    } catch (const json_error& e) {
        EXPECT_NE(std::string(e.what()).find("offset 7"), std::string::npos) << e.what();
    }
    EXPECT_THROW(json_value::parse("1").string(), json_error);  // the wrong kind
    EXPECT_THROW(read_json_file("/nonexistent/x.json"), json_error);
}

}  // namespace
}  // namespace blitz::report
