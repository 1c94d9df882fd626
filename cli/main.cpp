// The blitz binary: for now it runs the demo workload; later issues add conformance, bench,
// stress and topo subcommands.

#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "bench.hpp"
#include "demo.hpp"

namespace {

void usage(std::ostream& os) {
    os << "usage: blitz [demo|bench] [--quick] [--workers N] [--fanout N] [--chain N]\n"
          "  demo        fan-out of 1,000,000 tasks and a chain of 100,000 spawns, then the\n"
          "              runtime's counters (the default)\n"
          "  bench       timer accuracy (sleep lateness, idle and busy) and timer cost\n"
          "  --quick     smaller runs for smoke tests\n"
          "  --workers N worker threads (default: hardware threads)\n";
}

unsigned long parse_count(const char* flag, const char* v) {
    try {
        std::size_t used = 0;
        unsigned long n = std::stoul(v, &used);
        if (used == std::strlen(v) && n > 0) return n;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument(std::string(flag) + " expects a positive integer, got '" + v + "'");
}

}  // namespace

int main(int argc, char** argv) {
    try {
        blitz::cli::demo_options o;
        blitz::cli::bench_options b;
        bool bench = false;
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            auto value = [&]() -> const char* {
                if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
                return argv[++i];
            };
            if (a == "demo") {
            } else if (a == "bench") {
                bench = true;
            } else if (a == "--quick") {
                o.fanout = 10'000;
                o.chain = 1'000;
                b.samples = 20;
            } else if (a == "--workers") {
                o.workers = b.workers = static_cast<unsigned>(parse_count("--workers", value()));
            } else if (a == "--fanout") {
                o.fanout = parse_count("--fanout", value());
            } else if (a == "--chain") {
                o.chain = parse_count("--chain", value());
            } else if (a == "-h" || a == "--help" || a == "help") {
                usage(std::cout);
                return 0;
            } else {
                std::cerr << "blitz: unknown argument '" << a << "'\n";
                usage(std::cerr);
                return 2;
            }
        }
        return bench ? blitz::cli::run_bench(b) : blitz::cli::run_demo(o);
    } catch (const std::exception& e) {
        std::cerr << "blitz: " << e.what() << "\n";
        return 2;
    }
}
