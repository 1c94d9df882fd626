// SPDX-License-Identifier: MIT
// blitz-noprobes: the benchmark runner (`blitz bench-run`) linked against a runtime built with
// every probe site compiled out, so that the report can set probes compiled in but off against
// compiled out, pair by pair.

#include <exception>
#include <iostream>

#include "runner.hpp"

int main(int argc, char** argv) {
    try {
        return blitz::bench::runner_main(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "blitz-noprobes: " << e.what() << "\n";
        return 2;
    }
}
