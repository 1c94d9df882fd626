// SPDX-License-Identifier: MIT
// blitz/fs.hpp on the blocking pool: each call is one spawn_blocking job around the syscalls.
#include "blitz/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/atomic.hpp"
#include "blitz/blocking.hpp"

namespace blitz::fs {
namespace {

detail::atomic<std::uint64_t> g_blocking{0};

std::error_code errno_ec(int e) { return std::error_code(e, std::generic_category()); }

// Runs f() on the blocking pool, counted. Callers keep the handle in a variable and await that:
// g++ 12 destroys a closure temporary inside a co_await operand twice.
template <class F>
auto on_pool(F f) -> blocking_handle<std::invoke_result_t<F&>> {
    g_blocking.fetch_add(1, std::memory_order_relaxed);
    return spawn_blocking(std::move(f));
}

metadata from_stat(const struct stat& st) {
    metadata m;
    m.size = static_cast<std::uint64_t>(st.st_size);
    m.is_file = S_ISREG(st.st_mode);
    m.is_dir = S_ISDIR(st.st_mode);
    m.is_symlink = S_ISLNK(st.st_mode);
    m.mode = st.st_mode & 07777;
    m.modified = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) +
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    return m;
}

// A syscall's outcome carried back from the pool: a value or an errno.
template <class T>
struct outcome {
    T v{};
    int err = 0;
};

}  // namespace

op_counts counts() noexcept { return {g_blocking.load(std::memory_order_relaxed), 0}; }

file& file::operator=(file&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(o.fd_, -1);
        path_ = std::move(o.path_);
    }
    return *this;
}

file::~file() {
    if (fd_ >= 0) ::close(fd_);
}

task<result<file>> file::open(std::string path, open_options o) {
    int flags = O_CLOEXEC;
    if (o.read && (o.write || o.append)) {
        flags |= O_RDWR;
    } else if (o.write || o.append) {
        flags |= O_WRONLY;
    } else {
        flags |= O_RDONLY;
    }
    if (o.append) flags |= O_APPEND;
    if (o.create) flags |= O_CREAT;
    if (o.create_new) flags |= O_CREAT | O_EXCL;
    if (o.truncate) flags |= O_TRUNC;
    const mode_t mode = o.mode;
    auto job = on_pool([path, flags, mode]() -> outcome<int> {
        const int fd = ::open(path.c_str(), flags, mode);
        return {fd, fd < 0 ? errno : 0};
    });
    auto r = co_await job;
    if (r.err) co_return result<file>(errno_ec(r.err), "open", path);
    co_return file(r.v, std::move(path));
}

task<result<file>> file::create(std::string path) {
    open_options o;
    o.read = false;
    o.write = true;
    o.create = true;
    o.truncate = true;
    co_return co_await open(std::move(path), o);
}

task<result<std::size_t>> file::read_at(std::span<std::byte> buf, std::uint64_t offset) {
    // The job reads into a buffer of its own and the bytes are copied out after the await: a
    // task aborted meanwhile leaves the job writing into memory it owns, never into `buf`.
    auto [n, b] = co_await read_owned_at(owned_buffer(buf.size()), offset);
    if (!n) co_return std::move(n);
    std::memcpy(buf.data(), b.data(), *n);
    co_return *n;
}

task<buf_result<result<std::size_t>>> file::read_owned_at(owned_buffer b, std::uint64_t offset) {
    const int fd = fd_;
    // The buffer travels to the job and back: an abandoned read leaves it with the job.
    auto job = on_pool([fd, b = std::move(b), offset]() mutable {
        const ssize_t n = ::pread(fd, b.data(), b.capacity(), static_cast<off_t>(offset));
        b.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
        return std::pair<owned_buffer, int>(std::move(b), n < 0 ? errno : 0);
    });
    auto r = co_await job;
    if (r.second) {
        co_return buf_result<result<std::size_t>>{
            result<std::size_t>(errno_ec(r.second), "read", path_), std::move(r.first)};
    }
    const std::size_t n = r.first.size();
    co_return buf_result<result<std::size_t>>{result<std::size_t>(n), std::move(r.first)};
}

task<result<std::size_t>> file::write_at(std::span<const std::byte> buf, std::uint64_t offset) {
    // A copy travels with the job, for the same reason as read_at's buffer.
    const int fd = fd_;
    auto job = on_pool([fd, data = owned_buffer::copy_of(buf), offset]() -> outcome<std::size_t> {
        const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
        return {n < 0 ? 0 : static_cast<std::size_t>(n), n < 0 ? errno : 0};
    });
    auto r = co_await job;
    if (r.err) co_return result<std::size_t>(errno_ec(r.err), "write", path_);
    co_return r.v;
}

task<result<ok_t>> file::write_all_at(std::span<const std::byte> buf, std::uint64_t offset) {
    while (!buf.empty()) {
        auto n = co_await write_at(buf, offset);
        if (!n) co_return result<ok_t>(n.error(), "write", path_);
        buf = buf.subspan(*n);
        offset += *n;
    }
    co_return ok_t{};
}

task<result<ok_t>> file::sync() {
    const int fd = fd_;
    auto job = on_pool([fd]() -> int { return ::fsync(fd) == 0 ? 0 : errno; });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "fsync", path_);
    co_return ok_t{};
}

task<result<metadata>> file::stat() {
    const int fd = fd_;
    auto job = on_pool([fd]() -> outcome<struct stat> {
        struct stat st{};
        const int rc = ::fstat(fd, &st);
        return {st, rc == 0 ? 0 : errno};
    });
    auto r = co_await job;
    if (r.err) co_return result<metadata>(errno_ec(r.err), "stat", path_);
    co_return from_stat(r.v);
}

task<result<ok_t>> file::close() {
    const int fd = std::exchange(fd_, -1);
    if (fd < 0) co_return result<ok_t>(errno_ec(EBADF), "close", path_);
    // close(2) of a regular file may flush (NFS): on the pool too.
    auto job = on_pool([fd]() -> int { return ::close(fd) == 0 ? 0 : errno; });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "close", path_);
    co_return ok_t{};
}

task<result<std::vector<std::byte>>> read(std::string path) {
    auto job = on_pool([path]() -> outcome<std::vector<std::byte>> {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return {{}, errno};
        outcome<std::vector<std::byte>> out;
        std::byte chunk[65536];
        for (;;) {
            const ssize_t n = ::read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                out.err = errno;
                break;
            }
            if (n == 0) break;
            out.v.insert(out.v.end(), chunk, chunk + n);
        }
        ::close(fd);
        return out;
    });
    auto r = co_await job;
    if (r.err) co_return result<std::vector<std::byte>>(errno_ec(r.err), "read", path);
    co_return std::move(r.v);
}

task<result<std::string>> read_to_string(std::string path) {
    auto r = co_await read(path);
    if (!r) co_return result<std::string>(r.error(), "read", path);
    co_return std::string(reinterpret_cast<const char*>(r->data()), r->size());
}

task<result<ok_t>> write(std::string path, std::string data) {
    auto job = on_pool([path, data = std::move(data)]() -> int {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) return errno;
        std::size_t done = 0;
        int err = 0;
        while (done < data.size()) {
            const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                err = errno;
                break;
            }
            done += static_cast<std::size_t>(n);
        }
        if (::close(fd) != 0 && err == 0) err = errno;
        return err;
    });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "write", path);
    co_return ok_t{};
}

task<result<metadata>> stat(std::string path) {
    auto job = on_pool([path]() -> outcome<struct stat> {
        struct stat st{};
        const int rc = ::stat(path.c_str(), &st);
        return {st, rc == 0 ? 0 : errno};
    });
    auto r = co_await job;
    if (r.err) co_return result<metadata>(errno_ec(r.err), "stat", path);
    co_return from_stat(r.v);
}

task<result<ok_t>> rename(std::string from, std::string to) {
    auto job = on_pool(
        [from, to]() -> int { return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno; });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "rename", from + " -> " + to);
    co_return ok_t{};
}

task<result<ok_t>> remove(std::string path) {
    auto job = on_pool([path]() -> int {
        if (::unlink(path.c_str()) == 0) return 0;
        if (errno == EISDIR || errno == EPERM) {
            struct stat st{};
            if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
                return ::rmdir(path.c_str()) == 0 ? 0 : errno;
            }
            return EPERM;
        }
        return errno;
    });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "remove", path);
    co_return ok_t{};
}

task<result<ok_t>> create_dir_all(std::string path) {
    auto job = on_pool([path]() -> int {
        std::error_code ec;
        std::filesystem::create_directories(path, ec);
        return ec ? ec.value() : 0;
    });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "create_dir_all", path);
    co_return ok_t{};
}

task<result<std::vector<dir_entry>>> read_dir(std::string path) {
    auto job = on_pool([path]() -> outcome<std::vector<dir_entry>> {
        DIR* d = ::opendir(path.c_str());
        if (!d) return {{}, errno};
        outcome<std::vector<dir_entry>> out;
        errno = 0;
        while (dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            bool dir = e->d_type == DT_DIR;
            if (e->d_type == DT_UNKNOWN) {
                struct stat st{};
                dir = ::fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
            }
            out.v.push_back({name, dir});
        }
        out.err = errno;
        ::closedir(d);
        return out;
    });
    auto r = co_await job;
    if (r.err) co_return result<std::vector<dir_entry>>(errno_ec(r.err), "read_dir", path);
    co_return std::move(r.v);
}

}  // namespace blitz::fs
