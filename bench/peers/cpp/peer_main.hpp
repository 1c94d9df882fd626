// SPDX-License-Identifier: MIT
#pragma once
// The shared main of the C++ peers (Asio, oneTBB): parses --workers N --reps N --filter RE
// --allocs, runs each matching workload (one untimed warm-up, then the timed repetitions, then
// optionally one repetition with allocations counted) and prints the JSON schema of
// ../README.md. Allocations are counted by bench/common/alloc_count.cpp, linked in.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "../../common/alloc_count.hpp"

namespace peer {

using steady = std::chrono::steady_clock;

struct rep {
    double ns = 0;
    std::vector<double> samples;
};

struct workload {
    std::string name, kind;
    long ops;
    std::function<rep(unsigned workers)> run;
};

inline double since(steady::time_point t0) {
    return std::chrono::duration<double, std::nano>(steady::now() - t0).count();
}

inline rep timed(double ns) {
    rep r;
    r.ns = ns;
    return r;
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

inline std::string numbers(const std::vector<double>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        char b[32];
        std::snprintf(b, sizeof b, "%s%.0f", i ? "," : "", v[i]);
        s += b;
    }
    return s + "]";
}

inline int main(const std::string& peer, const std::string& version,
                const std::vector<workload>& all, int argc, char** argv) {
    unsigned workers = 4, reps = 10;
    std::string filter;
    bool allocs = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        while (!a.empty() && a[0] == '-') a.erase(0, 1);
        if (a == "allocs") {
            allocs = true;
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << peer << ": " << argv[i] << " needs a value\n";
            return 2;
        }
        const std::string v = argv[++i];
        if (a == "workers") {
            workers = static_cast<unsigned>(std::stoul(v));
        } else if (a == "reps") {
            reps = static_cast<unsigned>(std::stoul(v));
        } else if (a == "filter") {
            filter = v;
        } else {
            std::cerr << peer << ": unknown argument " << argv[i - 1] << "\n";
            return 2;
        }
    }
    const std::regex re(filter);
    for (const auto& w : all) {
        if (!std::regex_search(w.name, re)) continue;
        (void)w.run(workers);  // warm-up
        std::vector<double> times, samples;
        for (unsigned i = 0; i < reps; ++i) {
            rep r = w.run(workers);
            times.push_back(r.ns);
            samples.insert(samples.end(), r.samples.begin(), r.samples.end());
        }
        std::string extra;
        if (!samples.empty()) extra += ",\"samples_ns\":" + numbers(samples);
        if (allocs && w.kind != "latency") {
            const auto a0 = blitz::bench::allocations();
            blitz::bench::count_allocations(true);
            (void)w.run(workers);
            blitz::bench::count_allocations(false);
            const auto a1 = blitz::bench::allocations();
            char b[96];
            std::snprintf(b, sizeof b, ",\"allocs_per_op\":%.4f,\"bytes_per_op\":%.1f",
                          double(a1.count - a0.count) / double(w.ops),
                          double(a1.bytes - a0.bytes) / double(w.ops));
            extra += b;
        }
        std::cout << "{\"peer\":\"" << peer << "\",\"version\":\"" << version
                  << "\",\"workload\":\"" << w.name << "\",\"kind\":\"" << w.kind
                  << "\",\"workers\":" << workers << ",\"ops\":" << w.ops
                  << ",\"reps_ns\":" << numbers(times) << extra << "}" << std::endl;
    }
    return 0;
}

}  // namespace peer
