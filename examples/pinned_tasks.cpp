// SPDX-License-Identifier: MIT
// Example: tasks that stay put (docs/guide/pinned_tasks.md). A word counter sharded by worker:
// one shard task pinned to each worker owns a plain std::unordered_map (no lock, no atomics:
// only that worker's thread ever touches it), and producers on any thread route each word to
// its shard through a bounded channel. Then a local_set runs a batch of tasks that append to
// one std::vector without a lock, under a deadline after which the rest is aborted and waited
// for. Exits 0 when every count adds up.
//
//   build/release/example_pinned_tasks

#include <blitz/blitz.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

using namespace std::chrono_literals;

struct shard_totals {
    std::size_t distinct = 0;
    long words = 0;
    bool stayed_home = true;
};

// A shard: counts the words sent to it until every sender is gone. The map lives in this pinned
// task's frame, so it is only ever used from worker `home`'s thread.
blitz::task<shard_totals> shard(int home, blitz::receiver<std::string> words) {
    std::unordered_map<std::string, long> counts;
    shard_totals t;
    while (auto w = co_await words.recv()) {
        ++counts[*w];
        ++t.words;
        if (blitz::this_worker_index() != home) t.stayed_home = false;  // never (P1)
    }
    t.distinct = counts.size();
    co_return t;
}

// A producer on any worker: sends its words to their shards. A send waits while a shard's
// channel is full (back-pressure), and gives up if that shard is gone.
blitz::task<long> produce(std::vector<blitz::sender<std::string>> shards, int id, int n) {
    long sent = 0;
    for (int i = 0; i < n; ++i) {
        std::string word = "w" + std::to_string((id * 7919 + i * 104729) % 500);
        auto& to = shards[std::hash<std::string>{}(word) % shards.size()];
        if (!co_await to.send(std::move(word))) break;
        ++sent;
    }
    co_return sent;
}

// A local_set: its tasks all run on this worker, so they share `log` without a lock. A batch
// that is not done by the deadline is aborted, and the set waits for what it aborted.
blitz::task<void> log_line(std::vector<std::string>& log, int i) {
    co_await blitz::sleep(std::chrono::microseconds(100 * (i % 5)));
    log.push_back("entry " + std::to_string(i));
    if (i == 13) co_await blitz::sleep(1h);  // a straggler the deadline cuts off
}

blitz::task<int> batch_with_deadline() {
    blitz::local_set<void> set;
    std::vector<std::string> log;
    for (int i = 0; i < 20; ++i) set.spawn_local(log_line(log, i));
    const auto deadline = blitz::now() + 200ms;
    int done = 0, cancelled = 0;
    while (!set.empty()) {
        // join_next is cancel safe: if the deadline wins, a task that finished meanwhile stays
        // in the set and is counted below.
        auto r = co_await blitz::select(set.join_next(), blitz::sleep_until(deadline));
        if (r.index() == 1) break;  // past the deadline
        if (auto& out = std::get<0>(r)) (out->is_cancelled() ? cancelled : done) += 1;
    }
    set.abort_all();  // what is left comes out as cancelled (or done, if it finished first)
    while (auto out = co_await set.join_next()) (out->is_cancelled() ? cancelled : done) += 1;
    std::printf("local_set on worker %u: %d done, %d cancelled, %zu log lines\n", set.home(), done,
                cancelled, log.size());
    // Every task came out once; each that finished had logged (a loaded machine may cut off
    // more than the straggler: the verdict counts, it does not time).
    co_return done + cancelled == 20 && static_cast<int>(log.size()) >= done ? 0 : 1;
}

int main() {
    blitz::runtime rt;
    const unsigned n = rt.num_workers();
    std::vector<blitz::sender<std::string>> shards;
    std::vector<blitz::join_handle<shard_totals>> owners;
    for (unsigned i = 0; i < n; ++i) {
        auto [tx, rx] = blitz::channel<std::string>(64);
        owners.push_back(rt.spawn_pinned(i, shard(static_cast<int>(i), std::move(rx))));
        shards.push_back(std::move(tx));
    }
    std::vector<blitz::join_handle<long>> producers;
    for (int p = 0; p < 8; ++p) producers.push_back(rt.spawn(produce(shards, p, 5000)));
    shards.clear();  // the producers hold the only senders now
    long sent = 0;
    for (auto& p : producers) sent += p.join();
    long counted = 0;
    bool home = true;
    for (unsigned i = 0; i < n; ++i) {
        const shard_totals t = owners[i].join();
        std::printf("shard %u: %ld words, %zu distinct\n", i, t.words, t.distinct);
        counted += t.words;
        home = home && t.stayed_home;
    }
    std::printf("%ld words sent, %ld counted, every shard on its worker: %s\n", sent, counted,
                home ? "yes" : "no");
    const int batch = rt.block_on(batch_with_deadline());
    return sent == counted && sent == 8 * 5000 && home && batch == 0 ? 0 : 1;
}
