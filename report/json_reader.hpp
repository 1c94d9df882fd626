// SPDX-License-Identifier: MIT
#pragma once
// A small JSON reader for the files blitz writes itself (bench.json, conformance.json), used by
// `blitz compare`. The whole of RFC 8259 except that numbers are doubles and \u escapes outside
// the basic plane are kept as their two surrogates' UTF-8. Throws json_error with the offset.

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace blitz::report {

class json_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class json_value {
public:
    enum class kind { null, boolean, number, string, array, object };

    kind type() const noexcept { return k_; }
    bool is_null() const noexcept { return k_ == kind::null; }
    bool is_number() const noexcept { return k_ == kind::number; }
    bool is_string() const noexcept { return k_ == kind::string; }
    bool is_array() const noexcept { return k_ == kind::array; }
    bool is_object() const noexcept { return k_ == kind::object; }

    // Typed reads; a wrong kind throws json_error naming what was expected.
    bool boolean() const;
    double number() const;
    const std::string& string() const;
    const std::vector<json_value>& array() const;
    const std::map<std::string, json_value>& object() const;
    // A member of an object, or nullptr when absent (or when this is not an object).
    const json_value* find(const std::string& key) const noexcept;

    static json_value parse(const std::string& text);

private:
    friend class json_parser;
    kind k_ = kind::null;
    bool b_ = false;
    double n_ = 0;
    std::string s_;
    std::vector<json_value> a_;
    std::map<std::string, json_value> o_;
};

// Reads and parses a file; json_error names the file.
json_value read_json_file(const std::string& path);

}  // namespace blitz::report
