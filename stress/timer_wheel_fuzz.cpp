// libFuzzer target: the input bytes are a program of insert / cancel / advance operations run on
// the wheel and on an ordered-multimap model; any difference aborts. Built with clang only
// (BLITZ_FUZZ, on in the asan-ubsan preset); ctest runs it for a bounded number of inputs.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "time/timer_wheel.hpp"

namespace {

using blitz::detail::timer_entry;
using blitz::detail::timer_wheel;

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
    timer_wheel w(in.take(3));
    std::uint64_t now = w.elapsed();
    std::vector<std::unique_ptr<timer_entry>> es;
    std::multimap<std::uint64_t, timer_entry*> model;
    while (in.n > 0) {
        const std::uint64_t op = in.take(1);
        if (op % 3 == 0) {  // insert: offset with a random width, so every level is reached
            const unsigned width = 1 + static_cast<unsigned>(op >> 2) % 5;
            auto e = std::make_unique<timer_entry>();
            e->deadline = now + in.take(width);
            if (w.insert(e.get())) model.emplace(e->deadline, e.get());
            es.push_back(std::move(e));
        } else if (op % 3 == 1) {  // cancel the k-th pending timer
            if (model.empty()) continue;
            auto it = model.begin();
            for (std::uint64_t k = in.take(1) % model.size(); k > 0; --k) ++it;
            w.remove(it->second);
            model.erase(it);
        } else {  // advance
            const unsigned width = 1 + static_cast<unsigned>(op >> 2) % 5;
            const std::uint64_t to = now + in.take(width);
            std::set<timer_entry*> want, got;
            while (!model.empty() && model.begin()->first <= to) {
                want.insert(model.begin()->second);
                model.erase(model.begin());
            }
            w.advance(to, [&](timer_entry* e) {
                if (e->deadline > w.elapsed()) std::abort();  // fired early
                got.insert(e);
            });
            now = to;
            if (want != got || w.size() != model.size()) std::abort();
        }
    }
    return 0;
}
