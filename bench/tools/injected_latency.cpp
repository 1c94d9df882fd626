// SPDX-License-Identifier: MIT
// injected_latency: how long a task injected from outside waits when every worker is saturated
// by self-waking loops of 100 us polls (issue 45, G6). The same scenario as the G6 checker
// (workloads::injected_waits: tasks injected in pairs, the second while the first is queued),
// run for three periodic-check rules in alternation within one process, so that the load on
// the machine falls on all three alike:
//   now      the rest of a periodic batch is taken only while fewer than a quarter interval of
//            local tasks are ahead of it (issue 45)
//   d1b0fd4  the periodic check fills any ring holding fewer than 64 tasks (the control)
//   51c5dae  the periodic check always takes one task
// Prints, per worker count and rule, the push-to-start latency p50/p99 (wall clock) and how
// many tasks waited past the G6 bound of interval + interval / 4 + 2 polls.
//   injected_latency [--rounds N] [--pairs N] [--loops N] [--workers 1,2,4]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "blitz_testing/scenarios.hpp"

namespace {

struct rule {
    const char* name;
    void (*set)(blitz::config&);
};

const rule rules[] = {
    {"now", [](blitz::config&) {}},
    {"d1b0fd4", [](blitz::config& c) { c.debug.periodic_fill_past_interval = true; }},
    {"51c5dae", [](blitz::config& c) { c.debug.periodic_fetch_one = true; }},
};

struct tally {
    std::vector<double> us;
    int samples = 0, over = 0;
};

double pct(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(static_cast<double>(v.size()) * q))];
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 6, pairs = 50;
    unsigned loops = 32;
    std::vector<unsigned> workers{1, 2, 4};
    for (int i = 1; i < argc; ++i) {
        const bool more = i + 1 < argc;
        if (!std::strcmp(argv[i], "--rounds") && more) {
            rounds = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--pairs") && more) {
            pairs = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--loops") && more) {
            loops = static_cast<unsigned>(std::atoi(argv[++i]));
        } else if (!std::strcmp(argv[i], "--workers") && more) {
            workers.clear();
            for (const char* s = argv[++i]; *s;) {
                char* end = nullptr;
                workers.push_back(static_cast<unsigned>(std::strtoul(s, &end, 10)));
                s = *end == ',' ? end + 1 : end;
                if (end == s && *s) break;
            }
        } else {
            std::fprintf(stderr,
                         "usage: injected_latency [--rounds N] [--pairs N] [--loops N] "
                         "[--workers 1,2,4]\n");
            return 2;
        }
    }
    if (rounds < 1 || pairs < 1 || loops < 1 || workers.empty() ||
        std::find(workers.begin(), workers.end(), 0u) != workers.end()) {
        std::fprintf(stderr, "injected_latency: rounds, pairs, loops and workers must be >= 1\n");
        return 2;
    }
    constexpr std::size_t n_rules = sizeof(rules) / sizeof(rules[0]);
    std::vector<tally> t(workers.size() * n_rules);
    for (int r = 0; r < rounds; ++r) {
        for (std::size_t w = 0; w < workers.size(); ++w) {
            for (std::size_t k = 0; k < n_rules; ++k) {
                const std::size_t i = (k + static_cast<std::size_t>(r)) % n_rules;  // rotate
                blitz::config c = blitz::conformance::fresh(workers[w]);
                rules[i].set(c);
                const auto res = blitz::workloads::injected_waits(c, loops, pairs,
                                                                  std::chrono::microseconds(100));
                tally& x = t[w * n_rules + i];
                x.us.insert(x.us.end(), res.latency_us.begin(), res.latency_us.end());
                x.samples += res.samples;
                x.over += res.over;
            }
        }
    }
    std::printf("| workers | rule | tasks | p50 us | p99 us | past the G6 bound |\n");
    std::printf("|---:|---|---:|---:|---:|---:|\n");
    for (std::size_t w = 0; w < workers.size(); ++w) {
        for (std::size_t i = 0; i < n_rules; ++i) {
            const tally& x = t[w * n_rules + i];
            std::printf("| %u | %s | %d | %.0f | %.0f | %d |\n", workers[w], rules[i].name,
                        x.samples, pct(x.us, 0.5), pct(x.us, 0.99), x.over);
        }
    }
    return 0;
}
