// SPDX-License-Identifier: MIT
#pragma once
// Reads the result lines the runners print (one flat JSON object per line: strings, numbers,
// arrays of numbers), blitz's and every peer's alike, through report::json_value.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace blitz::bench {

struct jvalue {
    std::string s;
    double n = 0;
    std::vector<double> arr;
    bool is_string = false;
};

// The line's fields, or nullopt when it is not such an object (log output, a partial line).
std::optional<std::map<std::string, jvalue>> parse_line(const std::string& line);

}  // namespace blitz::bench
