// SPDX-License-Identifier: MIT
#include "json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace blitz::report {

std::string json_escape(std::string_view s) {
    std::string r;
    r.reserve(s.size());
    for (const char c : s) {
        switch (c) {
            case '"':
                r += "\\\"";
                break;
            case '\\':
                r += "\\\\";
                break;
            case '\n':
                r += "\\n";
                break;
            case '\r':
                r += "\\r";
                break;
            case '\t':
                r += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(c));
                    r += b;
                } else {
                    r += c;
                }
        }
    }
    return r;
}

void json_writer::indent() {
    if (!pretty_) return;
    os_ << '\n';
    for (std::size_t i = 0; i < stack_.size(); ++i) os_ << "  ";
}

void json_writer::before_value() {
    if (stack_.empty()) {
        if (wrote_top_) throw std::logic_error("json_writer: a second top-level value");
        wrote_top_ = true;
        return;
    }
    level& l = stack_.back();
    if (l.kind == ctx::object) {
        if (!l.key_pending) throw std::logic_error("json_writer: a value in an object needs a key");
        l.key_pending = false;
        return;
    }
    if (!l.first) os_ << ',';
    l.first = false;
    indent();
}

json_writer& json_writer::key(std::string_view k) {
    if (stack_.empty() || stack_.back().kind != ctx::object || stack_.back().key_pending) {
        throw std::logic_error("json_writer: a key outside an object, or two keys in a row");
    }
    level& l = stack_.back();
    if (!l.first) os_ << ',';
    l.first = false;
    indent();
    os_ << '"' << json_escape(k) << (pretty_ ? "\": " : "\":");
    l.key_pending = true;
    return *this;
}

void json_writer::open(ctx k, char c) {
    before_value();
    os_ << c;
    stack_.push_back(level{k});
}

void json_writer::close(ctx k, char c) {
    if (stack_.empty() || stack_.back().kind != k || stack_.back().key_pending) {
        throw std::logic_error("json_writer: unbalanced end");
    }
    const bool empty = stack_.back().first;
    stack_.pop_back();
    if (!empty) indent();
    os_ << c;
    if (stack_.empty() && pretty_) os_ << '\n';
}

json_writer& json_writer::begin_object() {
    open(ctx::object, '{');
    return *this;
}
json_writer& json_writer::end_object() {
    close(ctx::object, '}');
    return *this;
}
json_writer& json_writer::begin_array() {
    open(ctx::array, '[');
    return *this;
}
json_writer& json_writer::end_array() {
    close(ctx::array, ']');
    return *this;
}

json_writer& json_writer::value(std::string_view s) {
    before_value();
    os_ << '"' << json_escape(s) << '"';
    return *this;
}

json_writer& json_writer::value(double d) {
    before_value();
    if (!std::isfinite(d)) {
        os_ << "null";  // JSON has no NaN or infinity
        return *this;
    }
    char b[32];
    const auto r = std::to_chars(b, b + sizeof b, d);  // shortest form that reads back exactly
    os_.write(b, r.ptr - b);
    return *this;
}

json_writer& json_writer::value(long long n) {
    before_value();
    os_ << n;
    return *this;
}

json_writer& json_writer::value(unsigned long long n) {
    before_value();
    os_ << n;
    return *this;
}

json_writer& json_writer::value(bool b) {
    before_value();
    os_ << (b ? "true" : "false");
    return *this;
}

json_writer& json_writer::null() {
    before_value();
    os_ << "null";
    return *this;
}

}  // namespace blitz::report
