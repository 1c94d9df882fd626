// SPDX-License-Identifier: MIT
#include "args.hpp"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <system_error>

namespace blitz::cli {

args::args(std::string command, int argc, char** argv, int first) : command_(std::move(command)) {
    for (int i = first; i < argc; ++i) argv_.emplace_back(argv[i]);
    // Messages name the subcommand after main's "blitz: ".
    name_ = command_.compare(0, 6, "blitz ") == 0 ? command_.substr(6) : command_;
}

const std::string& args::next() {
    const std::string& a = argv_[i_++];
    inline_value_ = {};
    flag_ = a;
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
        const auto eq = a.find('=');
        if (eq != std::string::npos) {
            flag_ = a.substr(0, eq);
            inline_value_ = {true, a.substr(eq + 1)};
        }
    }
    return flag_;
}

std::string args::value() {
    if (inline_value_.has_value) return inline_value_.text;
    if (done()) throw usage_error(name_ + ": " + flag_ + " needs a value");
    return argv_[i_++];
}

unsigned long args::count(unsigned long max) { return parse_positive(flag_, value(), max); }

std::vector<unsigned> args::counts(unsigned long max) {
    const std::string v = value();
    std::vector<unsigned> out;
    std::size_t start = 0;
    for (;;) {
        const auto comma = v.find(',', start);
        const std::string item =
            v.substr(start, comma == std::string::npos ? comma : comma - start);
        out.push_back(static_cast<unsigned>(parse_positive(flag_, item, max)));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

void args::no_value() {
    if (inline_value_.has_value) {
        throw usage_error(name_ + ": " + flag_ + " takes no value (got '" + flag_ + "=" +
                          inline_value_.text + "')");
    }
}

void args::unknown() const {
    throw usage_error(name_ + ": unknown " +
                      std::string(flag_.empty() || flag_[0] != '-' ? "argument" : "option") + " '" +
                      flag_ + "'");
}

std::string args::command_line() const {
    // Quoted where a shell would split or expand it, so the line can be pasted back.
    std::string s = command_;
    for (const std::string& a : argv_) {
        const bool plain = !a.empty() && a.find_first_of(" \t'\"$*?;&|<>()\\") == std::string::npos;
        if (plain) {
            s += " " + a;
            continue;
        }
        s += " '";
        for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
        s += "'";
    }
    return s;
}

unsigned long parse_positive(const std::string& what, const std::string& v, unsigned long max) {
    // Digits only: std::stoul would take "-3" as a huge number and " 3" or "+3" as 3.
    bool digits = !v.empty() && v.size() <= 19;
    for (char c : v) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    const unsigned long n = digits ? std::stoul(v) : 0;
    if (!digits || n == 0 || n > max) {
        throw usage_error(what + " expects a positive integer" +
                          (max < (1ul << 31) ? " up to " + std::to_string(max) : std::string()) +
                          ", got '" + v + "'");
    }
    return n;
}

namespace {
bool writable_dir(const std::filesystem::path& d) { return ::access(d.c_str(), W_OK | X_OK) == 0; }
}  // namespace

void check_output_dir(const std::string& flag, const std::string& dir) {
    if (dir == "-") return;
    if (dir.empty()) throw usage_error(flag + " needs a directory (or - for stdout)");
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
        throw usage_error(flag + ": '" + dir + "' exists and is not a directory");
    }
    fs::create_directories(dir, ec);
    if (ec) throw usage_error(flag + ": cannot create '" + dir + "': " + ec.message());
    if (!writable_dir(dir)) throw usage_error(flag + ": '" + dir + "' is not writable");
}

void check_output_file(const std::string& flag, const std::string& file) {
    if (file == "-") return;
    if (file.empty()) throw usage_error(flag + " needs a file name (or - for stdout)");
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(file, ec)) throw usage_error(flag + ": '" + file + "' is a directory");
    fs::path parent = fs::path(file).parent_path();
    if (parent.empty()) parent = ".";
    if (!fs::is_directory(parent, ec)) {
        throw usage_error(flag + ": directory '" + parent.string() + "' does not exist");
    }
    if (!writable_dir(parent))
        throw usage_error(flag + ": '" + parent.string() + "' is not writable");
}

}  // namespace blitz::cli
