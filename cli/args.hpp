// SPDX-License-Identifier: MIT
#pragma once
// The command line of one blitz subcommand, read the way git, cargo and Google Benchmark read
// theirs: `--flag value` and `--flag=value` both work, a flag the subcommand does not know is an
// error, counts are positive decimal integers (a negative number is refused, never wrapped), and
// `-` as an output names stdout.

#include <stdexcept>
#include <string>
#include <vector>

namespace blitz::cli {

// Exit statuses of the blitz binary (README "The blitz command"): 0 every check passed, 1 a
// check failed, 2 the command line was wrong (nothing ran), 3 a run hung.
enum exit_status : int { exit_pass = 0, exit_failed = 1, exit_usage = 2, exit_hang = 3 };

// A wrong command line: main prints it with a pointer to --help and exits with exit_usage.
class usage_error : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

class args {
public:
    // `command` names the subcommand in messages ("blitz conformance"); argv[first..argc) are
    // its arguments.
    args(std::string command, int argc, char** argv, int first);

    bool done() const noexcept { return i_ >= argv_.size(); }
    // The next argument's flag, without any "=value" part. A non-flag (no leading "--", and
    // not "-h") is returned as is; the caller decides whether it takes positionals.
    const std::string& next();
    // The current flag's value: what followed '=', else the next argument.
    std::string value();
    // True when the current flag was written with '=' (a boolean flag must not be).
    bool has_inline_value() const noexcept { return inline_value_.has_value; }
    // A positive integer value, at most `max`; "-3", "0", "3x", "99999999999999999999" refused.
    unsigned long count(unsigned long max = 1ul << 31);
    // A comma list of positive integers ("1,2,4").
    std::vector<unsigned> counts(unsigned long max = 1ul << 20);
    // True when the next argument is a value, not a flag (for flags that take several).
    bool peek_positional() const noexcept {
        return !done() && (argv_[i_].empty() || argv_[i_][0] != '-');
    }
    // For a boolean flag: refuses "--quick=yes".
    void no_value();
    [[noreturn]] void unknown() const;
    // The arguments as typed, for "reproduce:" lines.
    std::string command_line() const;
    const std::string& command() const noexcept { return command_; }

private:
    struct maybe {
        bool has_value = false;
        std::string text;
    };
    std::string command_, name_;
    std::vector<std::string> argv_;
    std::size_t i_ = 0;
    std::string flag_;
    maybe inline_value_;
};

// Parses a positive decimal integer as above; `what` names it in the message.
unsigned long parse_positive(const std::string& what, const std::string& v,
                             unsigned long max = 1ul << 31);

// Output locations are checked before a run starts, so an hour of benchmarks never ends in
// "cannot write". "-" (stdout) is always fine. A directory is created if missing and must be
// writable; a file's directory must exist and be writable. Throws usage_error naming the flag.
void check_output_dir(const std::string& flag, const std::string& dir);
void check_output_file(const std::string& flag, const std::string& file);

}  // namespace blitz::cli
