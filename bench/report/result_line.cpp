// SPDX-License-Identifier: MIT
#include "result_line.hpp"

#include <cctype>
#include <cstdlib>

namespace blitz::bench {

std::optional<std::map<std::string, jvalue>> parse_line(const std::string& line) {
    std::map<std::string, jvalue> m;
    std::size_t i = 0;
    auto ws = [&] {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    };
    auto str = [&](std::string& out) {
        if (line[i] != '"') return false;
        for (++i; i < line.size() && line[i] != '"'; ++i) {
            if (line[i] == '\\' && i + 1 < line.size()) {
                ++i;
                out += line[i] == 'n' ? '\n' : line[i];
            } else {
                out += line[i];
            }
        }
        ++i;
        return true;
    };
    auto num = [&](double& out) {
        const char* b = line.c_str() + i;
        char* e = nullptr;
        out = std::strtod(b, &e);
        if (e == b) return false;
        i += static_cast<std::size_t>(e - b);
        return true;
    };
    ws();
    if (i >= line.size() || line[i] != '{') return std::nullopt;
    ++i;
    for (;;) {
        ws();
        if (i < line.size() && line[i] == '}') return m;
        std::string key;
        if (i >= line.size() || !str(key)) return std::nullopt;
        ws();
        if (i >= line.size() || line[i] != ':') return std::nullopt;
        ++i;
        ws();
        jvalue v;
        if (i < line.size() && line[i] == '"') {
            v.is_string = str(v.s);
        } else if (i < line.size() && line[i] == '[') {
            ++i;
            for (;;) {
                ws();
                if (i < line.size() && line[i] == ']') {
                    ++i;
                    break;
                }
                double d;
                if (!num(d)) return std::nullopt;
                v.arr.push_back(d);
                ws();
                if (i < line.size() && line[i] == ',') ++i;
            }
        } else if (!num(v.n)) {
            return std::nullopt;
        }
        m[key] = std::move(v);
        ws();
        if (i < line.size() && line[i] == ',') ++i;
    }
}

}  // namespace blitz::bench
