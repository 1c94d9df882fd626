#pragma once
// Helpers for queue tests: stand-alone task headers that are never run.

#include <memory>
#include <vector>

#include "blitz/detail/task_header.hpp"

namespace blitz::detail::testing {

// A pool of inert headers whose addresses identify tasks in queue tests.
class header_pool {
public:
    explicit header_pool(std::size_t n) : hs_(new task_header[n]), n_(n) {}
    task_header* at(std::size_t i) { return &hs_[i]; }
    std::size_t index_of(const task_header* h) const {
        return static_cast<std::size_t>(h - &hs_[0]);
    }
    std::size_t size() const { return n_; }

private:
    std::unique_ptr<task_header[]> hs_;
    std::size_t n_;
};

}  // namespace blitz::detail::testing
