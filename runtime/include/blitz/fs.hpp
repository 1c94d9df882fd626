// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// Files and directories without blocking a worker (issue 17, IO.md 7.5): blitz::fs::file with
// positioned reads and writes, sync, metadata and close, and whole-file and directory helpers.
//
//   auto f = co_await fs::file::open("data.bin");
//   std::array<std::byte, 4096> buf;
//   auto n = co_await f->read_at(buf, 0);
//   auto text = co_await fs::read_to_string("config.toml");
//
// Where it runs, per operation: on io_uring when the runtime's I/O driver is io_uring and its
// probe found the opcode (OPENAT, READ, WRITE, STATX, FSYNC, CLOSE, RENAMEAT, UNLINKAT), unless
// config fs_io_uring is off; otherwise on the runtime's blocking pool, one job per call (as
// Tokio's fs does). create_dir_all and read_dir always take the pool (no opcodes), and so does
// every call on a runtime with the epoll backend. fs::counts() says how many operations took
// each path. A file operation in flight keeps the workers reaping the ring, as a socket does.
//
// Cancellation: a task aborted during an operation leaves the operation's buffer with the
// driver (io_uring) or the job (pool), never in its frame; an open it abandoned has its
// descriptor closed when it arrives. An abandoned write may still have written.
//
// Errors: fs::result<T> holds a value or a std::error_code (compare with std::errc::...) and the
// path it concerns; message() says both ("open /etc/x: No such file or directory"), and value()
// on an error throws std::filesystem::filesystem_error, which carries them too.
//
// Thread-safety: a file is used by one task at a time.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "blitz/buffer.hpp"
#include "blitz/task.hpp"

namespace blitz::fs {

// A value, or an error with the operation and the path it failed on.
template <class T>
class [[nodiscard]] result {
public:
    result(T v) : v_(std::move(v)) {}  // NOLINT: implicit, as a result is returned
    result(std::error_code e, std::string op, std::string path)
        : ec_(e), op_(std::move(op)), path_(std::move(path)) {}

    bool ok() const noexcept { return v_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    const std::error_code& error() const noexcept { return ec_; }
    const std::string& path() const noexcept { return path_; }
    // "op path: reason", or "" when there is a value.
    std::string message() const { return ok() ? "" : op_ + " " + path_ + ": " + ec_.message(); }
    T& value() & {
        check();
        return *v_;
    }
    T&& value() && {
        check();
        return std::move(*v_);
    }
    const T& value() const& {
        check();
        return *v_;
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }

private:
    void check() const {
        if (!v_) throw std::filesystem::filesystem_error(op_, path_, ec_);
    }
    std::optional<T> v_;
    std::error_code ec_;
    std::string op_, path_;
};

struct ok_t {};  // the value of operations that return nothing

struct metadata {
    std::uint64_t size = 0;
    bool is_file = false, is_dir = false, is_symlink = false;
    mode_t mode = 0;  // permission bits
    std::chrono::system_clock::time_point modified;
};

struct open_options {
    bool read = true;
    bool write = false;
    bool append = false;
    bool create = false;      // create if missing
    bool create_new = false;  // create, failing if it exists
    bool truncate = false;
    mode_t mode = 0644;  // for created files (less the umask)
};

struct dir_entry {
    std::string name;
    bool is_dir = false;
};

// Operations so far, by path (all fs calls of the process): blocking-pool jobs (one per call)
// and io_uring operations (one per call, except read and write of a whole file: open, stat,
// the reads or writes, close).
struct op_counts {
    std::uint64_t blocking_pool = 0;
    std::uint64_t io_uring = 0;
};
op_counts counts() noexcept;

class file {
public:
    file() noexcept = default;
    file(file&&) noexcept = default;
    file& operator=(file&&) noexcept = default;
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    // If close() was not awaited, the descriptor is closed once neither the file nor an operation
    // still using it (a blocking-pool job of an aborted task) holds it: a number closed under a
    // running job could be reused, and the job would read or write someone else's file.
    ~file() = default;

    static task<result<file>> open(std::string path, open_options o = {});
    // Write-only, created or truncated.
    static task<result<file>> create(std::string path);

    // Up to buf.size() bytes at `offset` (0 at end of file).
    task<result<std::size_t>> read_at(std::span<std::byte> buf, std::uint64_t offset);
    // Into `b`'s capacity at `offset`; the buffer comes back resized to what was read.
    task<buf_result<result<std::size_t>>> read_owned_at(owned_buffer b, std::uint64_t offset);
    task<result<std::size_t>> write_at(std::span<const std::byte> buf, std::uint64_t offset);
    // Every byte, at `offset`.
    task<result<ok_t>> write_all_at(std::span<const std::byte> buf, std::uint64_t offset);
    task<result<ok_t>> sync();  // fsync
    task<result<fs::metadata>> stat();
    // Closes now and reports close(2)'s error; EBADF if already closed. (If an aborted
    // operation's job still uses the descriptor, it is closed when that job ends.)
    task<result<ok_t>> close();

    int fd() const noexcept;  // -1 when closed
    const std::string& path() const noexcept { return path_; }

    struct descriptor;  // the open descriptor, shared with the operations using it

private:
    file(std::shared_ptr<descriptor> d, std::string path) noexcept
        : fd_(std::move(d)), path_(std::move(path)) {}
    std::shared_ptr<descriptor> fd_;
    std::string path_;
};

task<result<std::string>> read_to_string(std::string path);
task<result<std::vector<std::byte>>> read(std::string path);
// Creates or truncates `path` and writes `data`.
task<result<ok_t>> write(std::string path, std::string data);
task<result<fs::metadata>> stat(std::string path);
task<result<ok_t>> rename(std::string from, std::string to);
// A file, or an empty directory.
task<result<ok_t>> remove(std::string path);
task<result<ok_t>> create_dir_all(std::string path);
// The entries of a directory (without "." and ".."), in the order the kernel gives them.
task<result<std::vector<dir_entry>>> read_dir(std::string path);

}  // namespace blitz::fs
