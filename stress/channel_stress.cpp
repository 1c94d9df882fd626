// The bounded channel under stress (X5), also under ThreadSanitizer: producers and consumers on
// all workers with tiny and larger capacities, so most sends wait. Every value arrives exactly
// once, each consumer sees each producer's values in order, and closing drains everything.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "blitz/blitz.hpp"
#include "stress_scale.hpp"

namespace blitz {
namespace {

struct mpmc_case {
    unsigned workers;
    std::size_t capacity;
    int producers, consumers;
};

class ChannelStress : public ::testing::TestWithParam<mpmc_case> {};

void PrintTo(const mpmc_case& c, std::ostream* os) {
    *os << c.workers << " workers, capacity " << c.capacity << ", " << c.producers << "x"
        << c.consumers;
}

TEST_P(ChannelStress, ExactlyOnceAndPerProducerOrder) {
    const mpmc_case k = GetParam();
    config c;
    c.workers = k.workers;
    runtime rt(c);
    const std::uint32_t per = static_cast<std::uint32_t>(2000 * stress::scale());
    std::vector<std::atomic<std::uint8_t>> seen(static_cast<std::size_t>(k.producers) * per);
    std::atomic<long> order_breaks{0}, sent_ok{0};
    std::vector<join_handle<void>> hs;
    {
        auto [tx, rx] = channel<std::uint64_t>(k.capacity);
        for (int p = 0; p < k.producers; ++p) {
            hs.push_back(rt.spawn([](sender<std::uint64_t> tx, std::uint64_t p, std::uint32_t n,
                                     std::atomic<long>& ok) -> task<void> {
                for (std::uint32_t i = 0; i < n; ++i) {
                    if ((co_await tx.send((p << 32) | i)).sent()) ok.fetch_add(1);
                    if (i % 64 == 0) co_await yield_now();
                }
            }(tx, static_cast<std::uint64_t>(p), per, sent_ok)));
        }
        for (int q = 0; q < k.consumers; ++q) {
            hs.push_back(rt.spawn([](receiver<std::uint64_t> rx, int producers, std::uint32_t per,
                                     std::vector<std::atomic<std::uint8_t>>& seen,
                                     std::atomic<long>& breaks) -> task<void> {
                std::vector<std::int64_t> last(static_cast<std::size_t>(producers), -1);
                while (auto v = co_await rx.recv()) {
                    const auto p = static_cast<std::size_t>(*v >> 32);
                    const auto i = static_cast<std::int64_t>(*v & 0xffffffffu);
                    if (i <= last[p]) breaks.fetch_add(1);
                    last[p] = i;
                    seen[p * per + static_cast<std::size_t>(i)].fetch_add(1);
                }
            }(rx, k.producers, per, seen, order_breaks)));
        }
    }  // our handles go: the channel closes when the producers finish
    for (auto& h : hs) h.join();
    EXPECT_EQ(sent_ok.load(), static_cast<long>(k.producers) * per);
    EXPECT_EQ(order_breaks.load(), 0);
    std::size_t missing = 0, twice = 0;
    for (auto& s : seen) {
        const auto n = s.load();
        missing += n == 0;
        twice += n > 1;
    }
    EXPECT_EQ(missing, 0u);
    EXPECT_EQ(twice, 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChannelStress,
                         ::testing::Values(mpmc_case{1, 1, 3, 2}, mpmc_case{2, 1, 4, 4},
                                           mpmc_case{4, 4, 8, 3}, mpmc_case{8, 64, 6, 6},
                                           mpmc_case{4, 2, 1, 8}, mpmc_case{16, 3, 12, 12}));

}  // namespace
}  // namespace blitz
