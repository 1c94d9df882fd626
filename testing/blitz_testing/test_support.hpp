// SPDX-License-Identifier: MIT
#pragma once
// Helpers for tests and checkers: stand-alone task headers that are never run, and a gate that
// holds plain threads (blocking-pool jobs) until opened.

#include <condition_variable>
#include <memory>
#include <mutex>
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

// Blocks threads in wait() until release(); then lets every later wait() through.
class gate {
public:
    void wait() {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return open_; });
    }
    void release() {
        std::lock_guard<std::mutex> l(mu_);
        open_ = true;
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
};

}  // namespace blitz::detail::testing
