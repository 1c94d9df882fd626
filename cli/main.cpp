// The blitz binary: the demo, the timer benchmarks and the conformance suite.

#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include "bench.hpp"
#include "demo.hpp"
#include "harness.hpp"

namespace {

void usage(std::ostream& os) {
    os << "usage: blitz [demo|bench|conformance] [options]\n"
          "  demo          fan-out of 1,000,000 tasks and a chain of 100,000 spawns, then the\n"
          "                runtime's counters (the default)\n"
          "  bench         timer accuracy (sleep lateness, idle and busy) and timer cost\n"
          "  conformance   invariant checkers with their negative controls; writes\n"
          "                results/<machine>/conformance.{md,json}; exit 1 on any failure\n"
          "options:\n"
          "  --quick              smaller runs (demo, bench, conformance)\n"
          "  --full               conformance: the full suite\n"
          "  --workers N|LIST     worker threads; conformance takes a list such as 1,2,4,8,16\n"
          "  --fanout N --chain N demo sizes\n"
          "  --seed N             conformance seed (same seed and config, same decisions)\n"
          "  --filter ID...       conformance: only these invariant ids\n"
          "  --out DIR            conformance: where to write the tables\n";
}

unsigned long parse_count(const std::string& flag, const std::string& v) {
    try {
        std::size_t used = 0;
        unsigned long n = std::stoul(v, &used);
        if (used == v.size() && n > 0) return n;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument(flag + " expects a positive integer, got '" + v + "'");
}

}  // namespace

int main(int argc, char** argv) {
    try {
        blitz::cli::demo_options demo;
        blitz::cli::bench_options bench;
        blitz::conformance::harness_options conf;
        std::string mode = "demo";
        std::string workers_arg;
        bool out_given = false;
        std::ostringstream cmd;
        cmd << "blitz";
        for (int i = 1; i < argc; ++i) cmd << ' ' << argv[i];
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
                return argv[++i];
            };
            if (a == "demo" || a == "bench" || a == "conformance") {
                mode = a;
            } else if (a == "--quick") {
                demo.fanout = 10'000;
                demo.chain = 1'000;
                bench.samples = 20;
                conf.quick = true;
            } else if (a == "--full") {
                conf.quick = false;
            } else if (a == "--workers") {
                workers_arg = value();
            } else if (a == "--fanout") {
                demo.fanout = parse_count(a, value());
            } else if (a == "--chain") {
                demo.chain = parse_count(a, value());
            } else if (a == "--seed") {
                conf.seed = parse_count(a, value());
            } else if (a == "--out") {
                conf.out_dir = value();
                out_given = true;
            } else if (a == "--filter") {
                while (i + 1 < argc && argv[i + 1][0] != '-') conf.filter.push_back(argv[++i]);
                if (conf.filter.empty()) throw std::invalid_argument("--filter needs invariant ids");
            } else if (a == "-h" || a == "--help" || a == "help") {
                usage(std::cout);
                return 0;
            } else {
                std::cerr << "blitz: unknown argument '" << a << "'\n";
                usage(std::cerr);
                return 2;
            }
        }
        if (!workers_arg.empty()) {
            conf.workers.clear();
            std::istringstream in(workers_arg);
            for (std::string w; std::getline(in, w, ',');) {
                conf.workers.push_back(static_cast<unsigned>(parse_count("--workers", w)));
            }
            demo.workers = bench.workers = conf.workers.front();
        }
        if (workers_arg.empty() && !conf.quick) conf.workers = {1, 2, 4, 8, 16};
        if (mode == "bench") return blitz::cli::run_bench(bench);
        if (mode == "conformance") {
            if (!out_given) conf.out_dir = "results/" + blitz::conformance::machine_id();
            conf.command = cmd.str();
            return blitz::conformance::run_harness(conf);
        }
        return blitz::cli::run_demo(demo);
    } catch (const std::exception& e) {
        std::cerr << "blitz: " << e.what() << "\n";
        return 2;
    }
}
