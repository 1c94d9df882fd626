// SPDX-License-Identifier: MIT
#pragma once
// A plain-text table for terminal reports.

#include <ostream>
#include <string>
#include <vector>

namespace blitz::cli {

class table {
public:
    explicit table(std::vector<std::string> header) : rows_{std::move(header)} {}
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    // First column left-aligned, the others right-aligned; a rule under the header.
    void print(std::ostream& os) const;

private:
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace blitz::cli
