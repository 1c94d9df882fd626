// SPDX-License-Identifier: MIT
#include "table.hpp"

#include <algorithm>
#include <iomanip>

namespace blitz::cli {

void table::print(std::ostream& os) const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_) {
        if (width.size() < r.size()) width.resize(r.size(), 0);
        for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    for (std::size_t n = 0; n < rows_.size(); ++n) {
        const auto& r = rows_[n];
        for (std::size_t i = 0; i < r.size(); ++i) {
            if (i == 0) {
                os << std::left << std::setw(static_cast<int>(width[i])) << r[i];
            } else {
                os << "  " << std::right << std::setw(static_cast<int>(width[i])) << r[i];
            }
        }
        os << '\n';
        if (n == 0) {
            std::size_t total = 0;
            for (auto w : width) total += w + 2;
            os << std::string(total - 2, '-') << '\n';
        }
    }
}

}  // namespace blitz::cli
