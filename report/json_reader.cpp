// SPDX-License-Identifier: MIT
#include "json_reader.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace blitz::report {

class json_parser {
public:
    explicit json_parser(const std::string& t) : t_(t) {}

    json_value document() {
        json_value v = value(0);
        space();
        if (p_ != t_.size()) fail("text after the value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw json_error("json: " + what + " at offset " + std::to_string(p_));
    }
    void space() {
        while (p_ < t_.size() &&
               (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) {
            ++p_;
        }
    }
    bool eat(char c) {
        space();
        if (p_ < t_.size() && t_[p_] == c) {
            ++p_;
            return true;
        }
        return false;
    }
    void expect(char c) {
        if (!eat(c)) fail(std::string("expected '") + c + "'");
    }
    bool word(const char* w) {
        const std::string s(w);
        if (t_.compare(p_, s.size(), s) != 0) return false;
        p_ += s.size();
        return true;
    }

    json_value value(int depth) {
        if (depth > 256) fail("nesting deeper than 256");
        space();
        if (p_ >= t_.size()) fail("unexpected end");
        json_value v;
        const char c = t_[p_];
        if (c == '{') {
            ++p_;
            v.k_ = json_value::kind::object;
            if (eat('}')) return v;
            do {
                space();
                std::string key = string_body();
                expect(':');
                v.o_[std::move(key)] = value(depth + 1);
            } while (eat(','));
            expect('}');
        } else if (c == '[') {
            ++p_;
            v.k_ = json_value::kind::array;
            if (eat(']')) return v;
            do {
                v.a_.push_back(value(depth + 1));
            } while (eat(','));
            expect(']');
        } else if (c == '"') {
            v.k_ = json_value::kind::string;
            v.s_ = string_body();
        } else if (word("true")) {
            v.k_ = json_value::kind::boolean;
            v.b_ = true;
        } else if (word("false")) {
            v.k_ = json_value::kind::boolean;
        } else if (word("null")) {
        } else {
            v.k_ = json_value::kind::number;
            v.n_ = number();
        }
        return v;
    }

    double number() {
        const std::size_t start = p_;
        if (p_ < t_.size() && t_[p_] == '-') ++p_;
        auto digits = [&] {
            const std::size_t d = p_;
            while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
            return p_ > d;
        };
        if (!digits()) fail("expected a value");
        if (p_ < t_.size() && t_[p_] == '.') {
            ++p_;
            if (!digits()) fail("expected digits after '.'");
        }
        if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
            ++p_;
            if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
            if (!digits()) fail("expected an exponent");
        }
        return std::strtod(t_.substr(start, p_ - start).c_str(), nullptr);
    }

    void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string string_body() {
        if (p_ >= t_.size() || t_[p_] != '"') fail("expected a string");
        ++p_;
        std::string out;
        for (;;) {
            if (p_ >= t_.size()) fail("unterminated string");
            const char c = t_[p_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p_ >= t_.size()) fail("unterminated escape");
            const char e = t_[p_++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    if (p_ + 4 > t_.size()) fail("short \\u escape");
                    unsigned cp = 0;
                    for (int i = 0; i < 4; ++i) {
                        const char h = t_[p_++];
                        cp <<= 4;
                        if (h >= '0' && h <= '9')
                            cp |= unsigned(h - '0');
                        else if (h >= 'a' && h <= 'f')
                            cp |= unsigned(h - 'a' + 10);
                        else if (h >= 'A' && h <= 'F')
                            cp |= unsigned(h - 'A' + 10);
                        else
                            fail("bad \\u escape");
                    }
                    utf8(out, cp);
                    break;
                }
                default:
                    fail("bad escape");
            }
        }
    }

    const std::string& t_;
    std::size_t p_ = 0;
};

namespace {
[[noreturn]] void wrong(const char* want) {
    throw json_error(std::string("json: expected ") + want);
}
}  // namespace

bool json_value::boolean() const {
    if (k_ != kind::boolean) wrong("a boolean");
    return b_;
}
double json_value::number() const {
    if (k_ != kind::number) wrong("a number");
    return n_;
}
const std::string& json_value::string() const {
    if (k_ != kind::string) wrong("a string");
    return s_;
}
const std::vector<json_value>& json_value::array() const {
    if (k_ != kind::array) wrong("an array");
    return a_;
}
const std::map<std::string, json_value>& json_value::object() const {
    if (k_ != kind::object) wrong("an object");
    return o_;
}
const json_value* json_value::find(const std::string& key) const noexcept {
    if (k_ != kind::object) return nullptr;
    const auto it = o_.find(key);
    return it == o_.end() ? nullptr : &it->second;
}

json_value json_value::parse(const std::string& text) { return json_parser(text).document(); }

json_value read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw json_error(path + ": cannot open");
    std::ostringstream s;
    s << in.rdbuf();
    try {
        return json_value::parse(s.str());
    } catch (const json_error& e) {
        throw json_error(path + ": " + e.what());
    }
}

}  // namespace blitz::report
