// SPDX-License-Identifier: MIT
#include "json_writer.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

namespace blitz::report {
namespace {

TEST(JsonWriter, CompactObjectWithNesting) {
    std::ostringstream os;
    json_writer w(os);
    w.begin_object()
        .field("id", "Q1")
        .field("runs", 3)
        .field("ratio", 0.5)
        .field("ok", true)
        .key("reps")
        .value(std::vector<double>{1, 2.25})
        .key("empty")
        .begin_array()
        .end_array()
        .key("none")
        .null()
        .end_object();
    EXPECT_EQ(
        os.str(),
        R"({"id":"Q1","runs":3,"ratio":0.5,"ok":true,"reps":[1,2.25],"empty":[],"none":null})");
    EXPECT_TRUE(w.done());
}

TEST(JsonWriter, PrettyPutsEachMemberOnItsLine) {
    std::ostringstream os;
    json_writer w(os, /*pretty=*/true);
    w.begin_object()
        .field("a", 1)
        .key("b")
        .begin_array()
        .value(2)
        .value(3)
        .end_array()
        .end_object();
    EXPECT_EQ(os.str(), "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ]\n}\n");
}

TEST(JsonWriter, EscapesStringsAndKeys) {
    EXPECT_EQ(json_escape("a\"b\\c\nd\te\x01"), "a\\\"b\\\\c\\nd\\te\\u0001");
    std::ostringstream os;
    json_writer w(os);
    w.begin_object().field("k\"", "v\n").end_object();
    EXPECT_EQ(os.str(), R"({"k\"":"v\n"})");
}

TEST(JsonWriter, NonFiniteNumbersBecomeNull) {
    std::ostringstream os;
    json_writer w(os);
    w.begin_array().value(1.0 / 0.0).end_array();
    EXPECT_EQ(os.str(), "[null]");
}

TEST(JsonWriter, RejectsMisuse) {
    std::ostringstream os;
    json_writer w(os);
    w.begin_object();
    EXPECT_THROW(w.value(1), std::logic_error);  // a value without its key
    EXPECT_THROW(w.end_array(), std::logic_error);
    w.key("a");
    EXPECT_THROW(w.key("b"), std::logic_error);      // two keys in a row
    EXPECT_THROW(w.end_object(), std::logic_error);  // the key's value is missing
}

}  // namespace
}  // namespace blitz::report
