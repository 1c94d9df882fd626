// SPDX-License-Identifier: MIT
// The benchmark runner as its own binary: blitz-runner (the library users link, the report's
// blitz rows), blitz-noprobes (every probe site compiled out, so the report can set probes
// compiled in but off against compiled out, pair by pair) and blitz-noinspect (the stall
// detector, histograms and dump records compiled out, likewise). `blitz bench-run` is the same
// runner inside the blitz binary, which carries the conformance suite's faults build.

#include <exception>
#include <filesystem>
#include <iostream>

#include "runner.hpp"

int main(int argc, char** argv) {
    try {
        return blitz::bench::runner_main(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << std::filesystem::path(argv[0]).filename().string() << ": " << e.what() << "\n";
        return 2;
    }
}
