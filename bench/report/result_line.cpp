// SPDX-License-Identifier: MIT
#include "result_line.hpp"

#include "json_reader.hpp"

namespace blitz::bench {

std::optional<std::map<std::string, jvalue>> parse_line(const std::string& line) {
    report::json_value doc;
    try {
        doc = report::json_value::parse(line);
    } catch (const report::json_error&) {
        return std::nullopt;  // log output, a partial line
    }
    if (!doc.is_object()) return std::nullopt;
    std::map<std::string, jvalue> m;
    for (const auto& [key, v] : doc.object()) {
        jvalue out;
        if (v.is_string()) {
            out.is_string = true;
            out.s = v.string();
        } else if (v.is_number()) {
            out.n = v.number();
        } else if (v.is_array()) {
            for (const report::json_value& x : v.array()) {
                if (!x.is_number()) return std::nullopt;  // only arrays of numbers
                out.arr.push_back(x.number());
            }
        } else {
            return std::nullopt;  // booleans, null and objects are not result fields
        }
        m[key] = std::move(out);
    }
    return m;
}

}  // namespace blitz::bench
