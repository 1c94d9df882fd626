// SPDX-License-Identifier: MIT
// libFuzzer target: the input bytes are a program of insert / cancel / advance operations run on
// the wheel and on an ordered-multimap model; any difference aborts. Built with clang only
// (BLITZ_FUZZ, on in the asan-ubsan preset); ctest runs it for a bounded number of inputs.
// Its negative control (timer_wheel_fuzz_control) is the same target on a wheel built with the
// faults and T3's defect switched on (no cascade): the fuzzer must find an input that differs.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "blitz_testing/wheel_model.hpp"

namespace {

struct reader {
    const std::uint8_t* p;
    std::size_t n;
    std::uint64_t take(unsigned bytes) {
        std::uint64_t v = 0;
        for (unsigned i = 0; i < bytes && n > 0; ++i, --n) v = (v << 8) | *p++;
        return v;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    reader in{data, size};
#if BLITZ_FUZZ_CONTROL
    blitz::detail::wheel_faults defect;
    defect.no_cascade = true;
    blitz::detail::wheel_model m(in.take(3), defect);
#else
    blitz::detail::wheel_model m(in.take(3));
#endif
    while (in.n > 0) {
        const std::uint64_t op = in.take(1);
        const unsigned width = 1 + static_cast<unsigned>(op >> 2) % 5;  // every level is reached
        if (op % 3 == 0) {                                              // insert
            m.insert(m.now() + in.take(width));
        } else if (op % 3 == 1) {  // cancel the k-th pending timer
            if (m.pending() == 0) continue;
            m.cancel_nth(in.take(1) % m.pending());
        } else {  // advance
            const auto st = m.advance(m.now() + in.take(width));
            if (st.early || !st.same_fired || !st.same_size) {
                std::fputs("timer_wheel_fuzz: the wheel and the model differ\n", stderr);
                std::abort();
            }
        }
    }
    return 0;
}
