// SPDX-License-Identifier: MIT
// blitz::fs (issue 17): every call, on the blocking pool, including the errors a user meets
// (a missing file, permission denied, a directory where a file was expected, a file that
// already exists), each naming its path.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <string>

#include "blitz/blitz.hpp"

namespace blitz {
namespace {

std::string scratch() {
    const std::string d = "/tmp/blitz-fs-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(d);
    return d;
}

std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

TEST(Fs, FilesWholeFilesAndDirectories) {
    runtime rt(config{});
    const std::string dir = scratch();
    const auto before = fs::counts().blocking_pool;
    rt.block_on([](std::string dir) -> task<void> {
        EXPECT_TRUE((co_await fs::create_dir_all(dir + "/a/b")).ok());
        EXPECT_TRUE((co_await fs::create_dir_all(dir + "/a/b")).ok());  // again: fine
        // A file: positioned writes and reads, owned reads, sync, stat, close.
        auto f = co_await fs::file::create(dir + "/a/data.bin");
        EXPECT_TRUE(f.ok()) << f.message();
        EXPECT_TRUE((co_await f->write_all_at(bytes_of("hello, world"), 0)).ok());
        EXPECT_TRUE((co_await f->write_at(bytes_of("WORLD"), 7)).ok());
        EXPECT_TRUE((co_await f->sync()).ok());
        auto st = co_await f->stat();
        EXPECT_EQ(st->size, 12u);
        EXPECT_TRUE(st->is_file);
        EXPECT_TRUE((co_await f->close()).ok());
        auto g = co_await fs::file::open(dir + "/a/data.bin");
        std::array<std::byte, 5> five;
        auto n = co_await g->read_at(five, 7);
        EXPECT_EQ(*n, 5u);
        EXPECT_EQ(std::memcmp(five.data(), "WORLD", 5), 0);
        auto [m, b] = co_await g->read_owned_at(owned_buffer(64), 0);
        EXPECT_EQ(*m, 12u);
        EXPECT_EQ(b.view(), "hello, WORLD");
        auto end = co_await g->read_at(five, 12);
        EXPECT_EQ(*end, 0u);  // at end of file
        // Whole files.
        EXPECT_TRUE((co_await fs::write(dir + "/a/b/text.txt", "line 1\nline 2\n")).ok());
        auto text = co_await fs::read_to_string(dir + "/a/b/text.txt");
        EXPECT_EQ(*text, "line 1\nline 2\n");
        auto raw = co_await fs::read(dir + "/a/b/text.txt");
        EXPECT_EQ(raw->size(), 14u);
        EXPECT_TRUE((co_await fs::rename(dir + "/a/b/text.txt", dir + "/a/moved.txt")).ok());
        auto meta = co_await fs::stat(dir + "/a/moved.txt");
        EXPECT_EQ(meta->size, 14u);
        auto list = co_await fs::read_dir(dir + "/a");
        std::vector<std::string> names;
        for (auto& e : *list) names.push_back(e.name + (e.is_dir ? "/" : ""));
        std::sort(names.begin(), names.end());
        EXPECT_EQ(names, (std::vector<std::string>{"b/", "data.bin", "moved.txt"}));
        EXPECT_TRUE((co_await fs::remove(dir + "/a/moved.txt")).ok());
        EXPECT_TRUE((co_await fs::remove(dir + "/a/b")).ok());  // an empty directory
        auto dstat = co_await fs::stat(dir + "/a");
        EXPECT_TRUE(dstat->is_dir);
    }(dir));
    EXPECT_GE(fs::counts().blocking_pool - before, 20u);
    EXPECT_EQ(fs::counts().io_uring, 0u);
    std::filesystem::remove_all(dir);
}

TEST(Fs, ErrorsNameTheirPath) {
    runtime rt(config{});
    const std::string dir = scratch();
    std::filesystem::create_directories(dir + "/sub");
    rt.block_on([](std::string dir) -> task<void> {
        // A missing file.
        auto missing = co_await fs::read_to_string(dir + "/nope.txt");
        EXPECT_FALSE(missing.ok());
        EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
        EXPECT_NE(missing.message().find(dir + "/nope.txt"), std::string::npos)
            << missing.message();
        try {
            (void)missing.value();
            ADD_FAILURE() << "value() of an error did not throw";
        } catch (const std::filesystem::filesystem_error& e) {
            EXPECT_EQ(e.path1().string(), dir + "/nope.txt");
            EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
        }
        // Permission denied (sysfs refuses writes to read-only attributes, even to root).
        fs::open_options w;
        w.read = false;
        w.write = true;
        auto denied = co_await fs::file::open("/sys/kernel/notes", w);
        EXPECT_FALSE(denied.ok());
        EXPECT_EQ(denied.error(), std::errc::permission_denied) << denied.message();
        // A directory where a file was expected.
        auto is_dir = co_await fs::file::create(dir + "/sub");
        EXPECT_EQ(is_dir.error(), std::errc::is_a_directory) << is_dir.message();
        auto read_dir_as_file = co_await fs::read_to_string(dir + "/sub");
        EXPECT_EQ(read_dir_as_file.error(), std::errc::is_a_directory);
        // A file that already exists, with create_new.
        EXPECT_TRUE((co_await fs::write(dir + "/x", "x")).ok());
        fs::open_options fresh;
        fresh.write = true;
        fresh.create_new = true;
        auto exists = co_await fs::file::open(dir + "/x", fresh);
        EXPECT_EQ(exists.error(), std::errc::file_exists);
        // A directory that is not empty, and a rename onto a missing directory.
        auto not_empty = co_await fs::remove(dir);
        EXPECT_FALSE(not_empty.ok());
        auto bad_rename = co_await fs::rename(dir + "/x", dir + "/missing/y");
        EXPECT_EQ(bad_rename.error(), std::errc::no_such_file_or_directory);
        auto listing = co_await fs::read_dir(dir + "/x");  // a file, not a directory
        EXPECT_EQ(listing.error(), std::errc::not_a_directory);
    }(dir));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace blitz
