// SPDX-License-Identifier: MIT
// Example: task sets (docs/guide/task_sets.md). A checker probes 200 "hosts" with at most 16
// probes in flight (a join_set as the pool: join one before spawning the next), each probe
// under a timeout of its own, and a deadline for the whole run after which the rest is aborted
// and waited for. Then a join_map keeps one health check per service, replaces a check by its
// key and aborts another. Probes are simulated (a sleep, and a failure for some hosts) so that
// the example needs no network; exits 0 when every count adds up.
//
//   build/release/example_task_sets

#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;

struct probe_result {
    int host;
    std::chrono::microseconds took;
};

// A probe: host 7, 107, ... fail; host 13, 113, ... hang (the timeout catches them).
blitz::task<probe_result> probe(int host) {
    const auto start = blitz::now();
    if (host % 100 == 13) co_await blitz::sleep(1h);
    co_await blitz::sleep(std::chrono::microseconds(200 + (host * 37) % 800));
    if (host % 100 == 7) throw std::runtime_error("host " + std::to_string(host) + " refused");
    co_return probe_result{
        host, std::chrono::duration_cast<std::chrono::microseconds>(blitz::now() - start)};
}

// A probe under its own timeout: a hung host becomes an error, not a stuck slot in the pool.
blitz::task<probe_result> probe_with_timeout(int host, std::chrono::milliseconds limit) {
    auto r = co_await blitz::timeout(limit, probe(host));
    if (r.timed_out()) throw std::runtime_error("host " + std::to_string(host) + " timed out");
    co_return std::move(r.value());
}

struct tally {
    int ok = 0, failed = 0, cancelled = 0, not_started = 0;
};

void count(tally& t, blitz::join_result<probe_result>& r) {
    if (r.has_value()) {
        ++t.ok;
    } else if (r.is_cancelled()) {
        ++t.cancelled;
    } else {
        ++t.failed;
        try {
            std::rethrow_exception(r.exception());
        } catch (const std::exception& e) {
            if (t.failed <= 3) std::printf("  probe failed: %s\n", e.what());
        }
    }
}

// Probes hosts [0, n) with at most `width` in flight, until every host is done or the deadline
// passes; then aborts what is left and waits for it (nothing outlives the function).
blitz::task<tally> probe_all(int n, int width, blitz::instant deadline) {
    tally t;
    blitz::join_set<probe_result> pool;
    int next = 0;
    bool past_deadline = false;
    while (!past_deadline && (next < n || !pool.empty())) {
        while (next < n && static_cast<int>(pool.size()) < width) {
            pool.spawn(probe_with_timeout(next++, 20ms));
        }
        // join_next is cancel safe: if the deadline wins, the probe that finished meanwhile
        // stays in the set and is counted below.
        auto r = co_await blitz::select(pool.join_next(), blitz::sleep_until(deadline));
        if (r.index() == 1) {
            past_deadline = true;
            break;
        }
        if (auto& done = std::get<0>(r)) count(t, *done);
    }
    t.not_started = n - next;
    pool.abort_all();
    while (auto r = co_await pool.join_next()) count(t, *r);
    co_return t;
}

// One health check per service; a check that hangs is replaced by a new one under its key.
blitz::task<int> health_checks() {
    blitz::join_map<std::string, probe_result> checks;
    checks.spawn("api", probe(1));
    checks.spawn("db", probe(13));  // hangs
    checks.spawn("cache", probe(2));
    checks.spawn("queue", probe(3));
    checks.spawn("db", probe(4));  // replaces the hung check: it is aborted at once
    (void)checks.abort("queue");   // comes out as cancelled
    int healthy = 0, aborted = 0;
    while (auto r = co_await checks.join_next()) {
        auto& [service, outcome] = *r;
        if (outcome.has_value()) {
            ++healthy;
            std::printf("  %-5s healthy\n", service.c_str());
        } else if (outcome.is_cancelled()) {
            ++aborted;
            std::printf("  %-5s aborted\n", service.c_str());
        }
    }
    co_return healthy == 3 && aborted == 1 ? 0 : 1;
}

int main() {
    blitz::runtime rt;
    const int n = 200;
    tally t = rt.block_on(probe_all(n, 16, blitz::now() + 30s));
    std::printf("probed %d hosts: %d ok, %d failed, %d cancelled, %d not started\n", n, t.ok,
                t.failed, t.cancelled, t.not_started);
    // Every host is accounted for once; hosts 7, 13, 107 and 113 always fail (a loaded machine
    // may time out a few more: the verdict counts, it does not time).
    const bool whole = t.ok + t.failed + t.cancelled + t.not_started == n;
    const bool expected = t.not_started > 0 || t.failed >= 4;
    // A second run whose deadline passes early: whatever was in flight is aborted and counted.
    tally s = rt.block_on(probe_all(n, 16, blitz::now() + 2ms));
    std::printf("with a 2 ms deadline: %d ok, %d failed, %d cancelled, %d not started\n", s.ok,
                s.failed, s.cancelled, s.not_started);
    const bool early = s.ok + s.failed + s.cancelled + s.not_started == n;
    std::printf("health checks:\n");
    const int health = rt.block_on(health_checks());
    return whole && expected && early && health == 0 ? 0 : 1;
}
