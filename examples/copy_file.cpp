// SPDX-License-Identifier: MIT
// Copies a file without blocking a worker: 64 KiB chunks read and written at their offsets
// through blitz::fs, while another task keeps ticking on the same runtime. With no arguments
// it makes a 4 MiB test file, copies it and checks the copy byte for byte (exit 0 if equal).
//
//   example_copy_file               the self-test
//   example_copy_file FROM TO       copy FROM to TO

#include <unistd.h>

#include <blitz/blitz.hpp>
#include <cstdio>
#include <string>

namespace fs = blitz::fs;

blitz::task<fs::result<std::uint64_t>> copy(std::string from, std::string to) {
    auto in = co_await fs::file::open(from);
    if (!in) co_return fs::result<std::uint64_t>(in.error(), "open", from);
    auto out = co_await fs::file::create(to);
    if (!out) co_return fs::result<std::uint64_t>(out.error(), "create", to);
    blitz::owned_buffer buf(64 * 1024);
    std::uint64_t at = 0;
    for (;;) {
        auto [n, got] = co_await in->read_owned_at(std::move(buf), at);
        if (!n) co_return fs::result<std::uint64_t>(n.error(), "read", from);
        if (*n == 0) break;
        if (auto w = co_await out->write_all_at(got.bytes(), at); !w) {
            co_return fs::result<std::uint64_t>(w.error(), "write", to);
        }
        at += *n;
        buf = std::move(got);
    }
    if (auto s = co_await out->sync(); !s)
        co_return fs::result<std::uint64_t>(s.error(), "sync", to);
    co_return at;
}

blitz::task<bool> self_test() {
    const std::string dir = "/tmp/blitz-copy-" + std::to_string(::getpid());
    if (!(co_await fs::create_dir_all(dir))) co_return false;
    std::string data(4 << 20, '\0');
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + (i * 7) % 26);
    if (!(co_await fs::write(dir + "/from.bin", data))) co_return false;
    auto ticker = blitz::spawn([]() -> blitz::task<int> {
        int ticks = 0;
        for (; ticks < 3; ++ticks) co_await blitz::sleep(std::chrono::milliseconds(1));
        co_return ticks;
    }());
    auto copied = co_await copy(dir + "/from.bin", dir + "/to.bin");
    if (!copied) {
        std::fprintf(stderr, "%s\n", copied.message().c_str());
        co_return false;
    }
    auto back = co_await fs::read_to_string(dir + "/to.bin");
    const bool same = back && *back == data;
    std::printf("copied %llu bytes: %s; the ticker ran %d times meanwhile\n",
                static_cast<unsigned long long>(*copied), same ? "identical" : "DIFFERENT",
                co_await ticker);
    (void)co_await fs::remove(dir + "/from.bin");
    (void)co_await fs::remove(dir + "/to.bin");
    (void)co_await fs::remove(dir);
    co_return same;
}

int main(int argc, char** argv) {
    blitz::runtime rt;
    if (argc == 3) {
        auto r = rt.block_on(copy(argv[1], argv[2]));
        if (!r) {
            std::fprintf(stderr, "%s\n", r.message().c_str());
            return 1;
        }
        std::printf("copied %llu bytes\n", static_cast<unsigned long long>(*r));
        return 0;
    }
    const bool ok = rt.block_on(self_test());
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
