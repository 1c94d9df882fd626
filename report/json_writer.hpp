// SPDX-License-Identifier: MIT
#pragma once
// json_writer: the one JSON writer of the reports (conformance.json, bench.json, the benchmark
// runner's result lines). It tracks nesting and commas, escapes strings fully and prints
// numbers in their shortest exact form, so no report writes JSON by hand.

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace blitz::report {

// `s` as the inside of a JSON string: quotes, backslashes and control characters escaped.
std::string json_escape(std::string_view s);

// Usage: w.begin_object().field("id", "Q1").key("runs").value(3).end_object();
// Compact by default; `pretty` puts every member and element on its own indented line.
// Misuse (a value where a key is due, unbalanced ends) throws std::logic_error.
class json_writer {
public:
    explicit json_writer(std::ostream& os, bool pretty = false) : os_(os), pretty_(pretty) {}

    json_writer& begin_object();
    json_writer& end_object();
    json_writer& begin_array();
    json_writer& end_array();
    json_writer& key(std::string_view k);

    json_writer& value(std::string_view s);
    json_writer& value(const char* s) { return value(std::string_view(s)); }
    json_writer& value(const std::string& s) { return value(std::string_view(s)); }
    json_writer& value(double d);
    json_writer& value(long long n);
    json_writer& value(unsigned long long n);
    json_writer& value(int n) { return value(static_cast<long long>(n)); }
    json_writer& value(unsigned n) { return value(static_cast<unsigned long long>(n)); }
    json_writer& value(long n) { return value(static_cast<long long>(n)); }
    json_writer& value(unsigned long n) { return value(static_cast<unsigned long long>(n)); }
    json_writer& value(bool b);
    json_writer& null();
    template <class T>
    json_writer& value(const std::vector<T>& v) {
        begin_array();
        for (const T& x : v) value(x);
        return end_array();
    }

    // key(k).value(v)
    template <class T>
    json_writer& field(std::string_view k, const T& v) {
        key(k);
        return value(v);
    }

    // True once the outermost value is complete.
    bool done() const noexcept { return stack_.empty() && wrote_top_; }

private:
    enum class ctx : std::uint8_t { object, array };
    struct level {
        ctx kind;
        bool first = true;
        bool key_pending = false;  // objects: a key was written, its value is due
    };
    void before_value();  // comma, newline and indent as the context needs
    void open(ctx k, char c);
    void close(ctx k, char c);
    void indent();

    std::ostream& os_;
    const bool pretty_;
    std::vector<level> stack_;
    bool wrote_top_ = false;
};

}  // namespace blitz::report
