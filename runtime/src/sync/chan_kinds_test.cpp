// SPDX-License-Identifier: MIT
// Oneshot, unbounded, broadcast and watch channels (X6).

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "blitz/blitz.hpp"
#include "blitz_testing/suite.hpp"

namespace blitz {
namespace {

TEST(Oneshot, ValueOrClosedExactlyOnce) {
    runtime rt(conformance::fresh(2));
    auto [tx, rx] = oneshot<std::string>();
    auto h = rt.spawn([](oneshot_receiver<std::string> rx) -> task<std::optional<std::string>> {
        co_return co_await rx;
    }(std::move(rx)));
    EXPECT_TRUE(std::move(tx).send("hi").sent());
    EXPECT_EQ(h.join(), std::optional<std::string>("hi"));

    auto [tx2, rx2] = oneshot<int>();
    auto h2 = rt.spawn([](oneshot_receiver<int> rx) -> task<std::optional<int>> {
        co_return co_await rx;
    }(std::move(rx2)));
    {
        auto gone = std::move(tx2);
    }
    EXPECT_EQ(h2.join(), std::nullopt);  // closed: the sender went without sending

    auto [tx3, rx3] = oneshot<std::unique_ptr<int>>();
    {
        auto gone = std::move(rx3);
    }
    auto r = std::move(tx3).send(std::make_unique<int>(5));
    EXPECT_TRUE(r.closed());
    EXPECT_EQ(*r.take_back(), 5);
}

TEST(Oneshot, TryRecvStates) {
    auto [tx, rx] = oneshot<int>();
    oneshot_receiver<int>::try_status st;
    EXPECT_FALSE(rx.try_recv(&st));
    EXPECT_EQ(st, oneshot_receiver<int>::try_status::empty);
    EXPECT_TRUE(std::move(tx).send(3).sent());
    EXPECT_EQ(rx.try_recv(&st), 3);
    EXPECT_FALSE(rx.try_recv(&st));
    EXPECT_EQ(st, oneshot_receiver<int>::try_status::closed);  // taken once, then the end
}

TEST(Unbounded, NeverWaitsToSendAndDrainsOnClose) {
    runtime rt(conformance::fresh(2));
    auto [tx, rx] = unbounded_channel<int>();
    for (int i = 0; i < 1000; ++i) EXPECT_TRUE(tx.send(i).sent());
    auto h = rt.spawn([](unbounded_receiver<int> rx) -> task<long> {
        long sum = 0;
        while (auto v = co_await rx.recv()) sum += *v;
        co_return sum;
    }(std::move(rx)));
    auto tx2 = tx;
    EXPECT_TRUE(tx2.send(1000).sent());
    {
        auto a = std::move(tx);
        auto b = std::move(tx2);
    }
    EXPECT_EQ(h.join(), 1000L * 1001 / 2);
}

TEST(Broadcast, EverySubscriberSeesEveryLaterValueInOrder) {
    runtime rt(conformance::fresh(2));
    auto [tx, rx0] = broadcast<int>(16);
    EXPECT_EQ(tx.send(-1), 1u);  // before the others subscribed: only rx0 gets it
    std::vector<join_handle<std::vector<int>>> hs;
    for (int i = 0; i < 3; ++i) {
        hs.push_back(rt.spawn([](broadcast_receiver<int> rx) -> task<std::vector<int>> {
            std::vector<int> got;
            for (;;) {
                auto r = co_await rx.recv();
                if (r.closed()) break;
                if (r.has_value()) got.push_back(r.value());
            }
            co_return got;
        }(tx.subscribe())));
    }
    for (int i = 0; i < 10; ++i) EXPECT_EQ(tx.send(i), 4u);
    {
        auto gone = std::move(tx);
    }
    const std::vector<int> expect{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    for (auto& h : hs) EXPECT_EQ(h.join(), expect);
    auto first = rx0.try_recv();
    ASSERT_TRUE(first && first->has_value());
    EXPECT_EQ(first->value(), -1);
}

TEST(Broadcast, ASlowReceiverGetsALagCount) {
    auto [tx, rx] = broadcast<int>(4);
    for (int i = 0; i < 10; ++i) tx.send(i);
    auto r = rx.try_recv();
    ASSERT_TRUE(r && r->lagged());
    EXPECT_EQ(r->missed(), 6u);  // received + lagged == sent: 6 lost, 4 still held
    std::vector<int> rest;
    while (auto v = rx.try_recv()) {
        if (v->has_value()) rest.push_back(v->value());
    }
    EXPECT_EQ(rest, (std::vector<int>{6, 7, 8, 9}));
}

TEST(Watch, VersionsGoForwardAndTheLastValueIsSeen) {
    runtime rt(conformance::fresh(2));
    auto [tx, rx] = watch<int>(0);
    auto h = rt.spawn([](watch_receiver<int> rx) -> task<std::vector<int>> {
        std::vector<int> seen;
        std::uint64_t last_version = 0;
        while (co_await rx.changed()) {
            auto [v, version] = rx.borrow_and_update();
            if (version <= last_version) seen.push_back(-999);  // a version went back
            last_version = version;
            seen.push_back(v);
        }
        co_return seen;
    }(rx));
    for (int i = 1; i <= 50; ++i) {
        tx.send(i);
        if (i % 10 == 0) std::this_thread::yield();
    }
    {
        auto gone = std::move(tx);
    }
    const auto seen = h.join();
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back(), 50);  // the last value is always observed
    for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1], seen[i]);
}

// A receiver made by subscribe() counts what was sent before as seen (it did not compile
// before the model test of stop 54 used it).
TEST(Watch, ASubscriberSeesOnlyWhatIsSentAfterIt) {
    auto [tx, rx] = watch<int>(0);
    tx.send(1);
    watch_receiver<int> late = tx.subscribe();
    EXPECT_FALSE(late.has_changed());
    EXPECT_EQ(late.borrow_and_update(), (std::pair<int, std::uint64_t>{1, 1}));
    EXPECT_TRUE(rx.has_changed());  // the first receiver has not read version 1
    tx.send(2);
    EXPECT_TRUE(late.has_changed());
    EXPECT_EQ(late.borrow_and_update().first, 2);
    runtime rt(conformance::fresh(1));
    auto h = rt.spawn([](watch_receiver<int> r) -> task<bool> {
        co_return co_await r.changed();
    }(std::move(late)));
    {
        auto gone = std::move(tx);
    }
    EXPECT_FALSE(h.join());  // nothing new, and the sender went
}

TEST(Watch, LockFreeValuesAndLockedValuesReadTheSame) {
    struct b64 {
        std::uint64_t w[8];
    };
    struct b72 {
        std::uint64_t w[9];
    };
    static_assert(detail::watch_lock_free<int> && detail::watch_lock_free<b64>);
    static_assert(!detail::watch_lock_free<b72> && !detail::watch_lock_free<std::string>);
    auto [tx, rx] = watch<b64>(b64{});
    auto [ts, rs] = watch<std::string>("a");
    EXPECT_FALSE(rx.has_changed());
    tx.send(b64{{1, 2, 3, 4, 5, 6, 7, 8}});
    ts.send("b");
    EXPECT_TRUE(rx.has_changed() && rs.has_changed());
    auto [v, version] = rx.borrow_and_update();
    EXPECT_EQ(v.w[0] + v.w[7], 9u);
    EXPECT_EQ(version, 1u);
    EXPECT_EQ(rs.borrow_and_update(), (std::pair<std::string, std::uint64_t>{"b", 1}));
    EXPECT_FALSE(rx.has_changed() || rs.has_changed());
}

}  // namespace
}  // namespace blitz
