// SPDX-License-Identifier: MIT
// Model: the table of spawn sites (issue 46, task/site_table.hpp). Two threads intern the same
// key at once, one through the lock-free probe and one that may take the mutex to add it; each
// then reads the key back from the index it got. Whatever the interleaving, both get the same
// index, and the index names the key. Control: the slot published with a relaxed store, so a
// prober that finds the slot may read the index's reverse entry before it was written.

#include <gtest/gtest.h>

#include <cstdint>

#include "model.hpp"
#include "model_report.hpp"
#include "task/site_table.hpp"

namespace blitz::model {
namespace {

std::function<void()> site_body() {
    return [] {
        detail::site_table<2> table;
        const void* k = reinterpret_cast<const void*>(std::uintptr_t{0x1000});
        const void* other = reinterpret_cast<const void*>(std::uintptr_t{0x2000});
        std::uint16_t a = 0, b = 0;
        const void *seen_a = nullptr, *seen_b = nullptr;
        thread first([&] {
            a = table.index_of(k);
            seen_a = table.at(a);
        });
        thread second([&] {
            (void)table.index_of(other);  // another add first: the two adds contend for the lock
            b = table.index_of(k);
            seen_b = table.at(b);
        });
        first.join();
        second.join();
        BLITZ_MODEL_CHECK(a != 0 && a == b);
        BLITZ_MODEL_CHECK(seen_a == k && seen_b == k);
    };
}

TEST(ModelSiteTable, OneKeyOneIndexAndItsEntryIsSeen) {
    expect_holds("site table: two threads intern one key", options{}, site_body());
}

TEST(ModelSiteTable, ControlARelaxedSlotIsCaught) {
    options o;
    o.weaken = "site_publish";
    expect_caught("site table control: the slot published relaxed", o, site_body());
}

}  // namespace
}  // namespace blitz::model
