// SPDX-License-Identifier: MIT
// blitz/fs.hpp: each call runs as io_uring operations when the runtime's driver runs the
// opcodes it needs (io_file_op_supported), and as one blocking-pool job otherwise.
#include "blitz/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "base/atomic.hpp"
#include "blitz/blocking.hpp"
#include "blitz/detail/context.hpp"
#include "blitz/detail/io_api.hpp"
#include "blitz/detail/task_header.hpp"
#include "blitz/dump.hpp"

namespace blitz::fs {
namespace {

using detail::io_op_kind;

detail::atomic<std::uint64_t> g_blocking{0};
detail::atomic<std::uint64_t> g_uring{0};

std::error_code errno_ec(int e) { return std::error_code(e, std::generic_category()); }

// Runs f() on the blocking pool, counted. Callers keep the handle in a variable and await that:
// g++ 12 destroys a closure temporary inside a co_await operand twice.
template <class F>
auto on_pool(F f) -> blocking_handle<std::invoke_result_t<F&>> {
    g_blocking.fetch_add(1, std::memory_order_relaxed);
    return spawn_blocking(std::move(f));
}

// The calling task's I/O driver when it runs every one of `kinds` on io_uring; null otherwise
// (a plain thread, no driver, epoll, config fs_io_uring off, or an opcode the kernel lacks).
// ring_for also counts the operation and shares the driver with its awaiter.
detail::io_driver* ring_runs(std::initializer_list<io_op_kind> kinds) noexcept {
    detail::io_driver* d = detail::current_io_if_any();
    if (!d) return nullptr;
    for (io_op_kind k : kinds) {
        if (!detail::io_file_op_supported(*d, k)) return nullptr;
    }
    return d;
}
std::shared_ptr<detail::io_driver> ring_for(std::initializer_list<io_op_kind> kinds) {
    detail::io_driver* d = ring_runs(kinds);
    if (!d) return nullptr;
    g_uring.fetch_add(1, std::memory_order_relaxed);
    return detail::io_share(*d);
}

// One file operation on io_uring, awaited: the buffer (with any paths) lives in the driver's
// operation state until the final completion, so a task aborted meanwhile leaves nothing the
// kernel can write into, and an open it abandoned has its descriptor closed by the driver.
// The result is -errno or the operation's value; buffer() has the buffer back.
class ring_op : private ::blitz::detail::ready_hook {
public:
    ring_op(std::shared_ptr<detail::io_driver> d, io_op_kind kind, detail::io_file_args a,
            owned_buffer b) noexcept
        : d_(std::move(d)), kind_(kind), args_(a), buf_(std::move(b)) {}
    ring_op(const ring_op&) = delete;
    ring_op& operator=(const ring_op&) = delete;
    ~ring_op() {
        if (op_) detail::io_op_abandon(*d_, op_);
    }

    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
        detail::task_header* t = detail::suspend_current(h, &ready, this, &describe);
        waker w = t->make_waker();
        op_ = detail::io_file_op_start(*d_, kind_, args_, buf_, w);
        if (!op_) {
            result_ = -ECANCELED;  // the runtime shuts down
            return false;
        }
        return !detail::io_op_done(op_);
    }
    long await_resume() noexcept {
        if (op_) result_ = detail::io_op_finish(*d_, std::exchange(op_, nullptr), buf_);
        return result_;
    }
    owned_buffer& buffer() noexcept { return buf_; }

private:
    static void describe(const ::blitz::detail::ready_hook* p, wait_point& out) {
        [[maybe_unused]] const auto* a = static_cast<const ring_op*>(p);
        out.kind = "file operation";
        out.fd = a->args_.fd;
    }
    static bool ready(const ::blitz::detail::ready_hook* p) noexcept {
        const auto* a = static_cast<const ring_op*>(p);
        return a->op_ && detail::io_op_done(a->op_);
    }

    std::shared_ptr<detail::io_driver> d_;
    io_op_kind kind_;
    detail::io_file_args args_;
    owned_buffer buf_;
    detail::io_op_state* op_ = nullptr;
    long result_ = 0;
};

// Paths as the kernel reads them from a buffer: NUL-terminated, after `skip` bytes.
owned_buffer path_buffer(const std::string& path, std::size_t skip = 0) {
    owned_buffer b(skip + path.size() + 1);
    std::memcpy(b.data() + skip, path.c_str(), path.size() + 1);
    b.resize(b.capacity());
    return b;
}

metadata metadata_of(std::uint64_t size, unsigned mode, std::int64_t sec, std::int64_t nsec) {
    metadata m;
    m.size = size;
    m.is_file = S_ISREG(mode);
    m.is_dir = S_ISDIR(mode);
    m.is_symlink = S_ISLNK(mode);
    m.mode = mode & 07777;
    m.modified = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(sec) + std::chrono::nanoseconds(nsec)));
    return m;
}
metadata from_stat(const struct stat& st) {
    return metadata_of(static_cast<std::uint64_t>(st.st_size), st.st_mode, st.st_mtim.tv_sec,
                       st.st_mtim.tv_nsec);
}
metadata from_statx(const struct statx& st) {
    return metadata_of(st.stx_size, st.stx_mode, st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec);
}

// statx of `path` (empty: of `fd`) on the ring.
task<long> ring_statx(std::shared_ptr<detail::io_driver> d, int fd, std::string path,
                      metadata& out) {
    detail::io_file_args a;
    a.fd = fd;
    ring_op op(std::move(d), io_op_kind::file_statx, a, path_buffer(path, sizeof(struct statx)));
    const long r = co_await op;
    if (r == 0) out = from_statx(*reinterpret_cast<const struct statx*>(op.buffer().data()));
    co_return r;
}

// A syscall's outcome carried back from the pool: a value or an errno.
template <class T>
struct outcome {
    T v{};
    int err = 0;
};

int open_flags(const open_options& o) {
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
    return flags;
}

}  // namespace

op_counts counts() noexcept {
    return {g_blocking.load(std::memory_order_relaxed), g_uring.load(std::memory_order_relaxed)};
}

// An open descriptor, closed when its last holder (the file, or an operation's job) lets go.
struct file::descriptor {
    explicit descriptor(int n) noexcept : fd(n) {}
    descriptor(const descriptor&) = delete;
    descriptor& operator=(const descriptor&) = delete;
    ~descriptor() {
        if (fd >= 0) ::close(fd);
    }
    int fd;
};

int file::fd() const noexcept { return fd_ ? fd_->fd : -1; }

task<result<file>> file::open(std::string path, open_options o) {
    const int flags = open_flags(o);
    const mode_t mode = o.mode;
    if (auto d = ring_for({io_op_kind::file_open})) {
        detail::io_file_args a;
        a.flags = flags;
        a.mode = mode;
        ring_op op(std::move(d), io_op_kind::file_open, a, path_buffer(path));
        const long r = co_await op;
        if (r < 0) co_return result<file>(errno_ec(static_cast<int>(-r)), "open", path);
        co_return file(std::make_shared<descriptor>(static_cast<int>(r)), std::move(path));
    }
    // The job's result owns the descriptor: an aborted task drops it, and it is closed.
    auto job = on_pool([path, flags, mode]() -> std::pair<std::shared_ptr<descriptor>, int> {
        const int fd = ::open(path.c_str(), flags, mode);
        if (fd < 0) return {nullptr, errno};
        return {std::make_shared<descriptor>(fd), 0};
    });
    auto r = co_await job;
    if (r.second) co_return result<file>(errno_ec(r.second), "open", path);
    co_return file(std::move(r.first), std::move(path));
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
    const std::shared_ptr<descriptor> held = fd_;  // the pool's job keeps it open
    const int fd = held ? held->fd : -1;
    using out = buf_result<result<std::size_t>>;
    if (auto d = ring_for({io_op_kind::file_read})) {
        detail::io_file_args a;
        a.fd = fd;
        a.offset = offset;
        ring_op op(std::move(d), io_op_kind::file_read, a, std::move(b));
        const long r = co_await op;
        owned_buffer& back = op.buffer();
        back.resize(r > 0 ? static_cast<std::size_t>(r) : 0);
        if (r < 0) {
            co_return out{result<std::size_t>(errno_ec(static_cast<int>(-r)), "read", path_),
                          std::move(back)};
        }
        co_return out{result<std::size_t>(static_cast<std::size_t>(r)), std::move(back)};
    }
    // The buffer travels to the job and back: an abandoned read leaves it with the job.
    auto job = on_pool([held, fd, b = std::move(b), offset]() mutable {
        const ssize_t n = ::pread(fd, b.data(), b.capacity(), static_cast<off_t>(offset));
        b.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
        return std::pair<owned_buffer, int>(std::move(b), n < 0 ? errno : 0);
    });
    auto r = co_await job;
    if (r.second) {
        co_return out{result<std::size_t>(errno_ec(r.second), "read", path_), std::move(r.first)};
    }
    const std::size_t n = r.first.size();
    co_return out{result<std::size_t>(n), std::move(r.first)};
}

task<result<std::size_t>> file::write_at(std::span<const std::byte> buf, std::uint64_t offset) {
    // A copy travels with the operation, for the same reason as read_at's buffer.
    const std::shared_ptr<descriptor> held = fd_;  // the pool's job keeps it open
    const int fd = held ? held->fd : -1;
    if (auto d = ring_for({io_op_kind::file_write})) {
        detail::io_file_args a;
        a.fd = fd;
        a.offset = offset;
        ring_op op(std::move(d), io_op_kind::file_write, a, owned_buffer::copy_of(buf));
        const long r = co_await op;
        if (r < 0) co_return result<std::size_t>(errno_ec(static_cast<int>(-r)), "write", path_);
        co_return static_cast<std::size_t>(r);
    }
    auto job =
        on_pool([held, fd, data = owned_buffer::copy_of(buf), offset]() -> outcome<std::size_t> {
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
    const std::shared_ptr<descriptor> held = fd_;  // the pool's job keeps it open
    const int fd = held ? held->fd : -1;
    if (auto d = ring_for({io_op_kind::file_fsync})) {
        detail::io_file_args a;
        a.fd = fd;
        ring_op op(std::move(d), io_op_kind::file_fsync, a, owned_buffer());
        const long r = co_await op;
        if (r < 0) co_return result<ok_t>(errno_ec(static_cast<int>(-r)), "fsync", path_);
        co_return ok_t{};
    }
    auto job = on_pool([held, fd]() -> int { return ::fsync(fd) == 0 ? 0 : errno; });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "fsync", path_);
    co_return ok_t{};
}

task<result<metadata>> file::stat() {
    const std::shared_ptr<descriptor> held = fd_;  // the pool's job keeps it open
    const int fd = held ? held->fd : -1;
    if (auto d = ring_for({io_op_kind::file_statx})) {
        metadata m;
        const long r = co_await ring_statx(std::move(d), fd, std::string(), m);
        if (r < 0) co_return result<metadata>(errno_ec(static_cast<int>(-r)), "stat", path_);
        co_return m;
    }
    auto job = on_pool([held, fd]() -> outcome<struct stat> {
        struct stat st{};
        const int rc = ::fstat(fd, &st);
        return {st, rc == 0 ? 0 : errno};
    });
    auto r = co_await job;
    if (r.err) co_return result<metadata>(errno_ec(r.err), "stat", path_);
    co_return from_stat(r.v);
}

task<result<ok_t>> file::close() {
    std::shared_ptr<descriptor> held = std::move(fd_);
    if (!held) co_return result<ok_t>(errno_ec(EBADF), "close", path_);
    // Still used by an aborted operation's job: that job closes it when it ends.
    if (held.use_count() > 1) co_return ok_t{};
    const int fd = std::exchange(held->fd, -1);
    held.reset();
    if (auto d = ring_for({io_op_kind::file_close})) {
        detail::io_file_args a;
        a.fd = fd;
        ring_op op(std::move(d), io_op_kind::file_close, a, owned_buffer());
        const long r = co_await op;
        if (r < 0) co_return result<ok_t>(errno_ec(static_cast<int>(-r)), "close", path_);
        co_return ok_t{};
    }
    // close(2) of a regular file may flush (NFS): on the pool too.
    auto job = on_pool([fd]() -> int { return ::close(fd) == 0 ? 0 : errno; });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "close", path_);
    co_return ok_t{};
}

namespace {

// fs::read on the ring: open, size, reads until the end, close (~file closes it if the task is
// aborted between them).
task<result<std::vector<std::byte>>> read_on_ring(std::string path) {
    using out = result<std::vector<std::byte>>;
    auto f = co_await file::open(path);
    if (!f) co_return out(f.error(), "read", path);
    auto size = co_await f->stat();
    std::vector<std::byte> v;
    std::size_t chunk = 65536;
    if (size && size->is_file) {
        v.reserve(size->size);
        chunk = std::max<std::size_t>(size->size + 1, 4096);  // one read, and one to see the end
        chunk = std::min<std::size_t>(chunk, std::size_t{1} << 24);
    }
    for (;;) {
        auto [n, b] = co_await f->read_owned_at(owned_buffer(chunk), v.size());
        if (!n) co_return out(n.error(), "read", path);
        if (*n == 0) break;
        v.insert(v.end(), b.data(), b.data() + *n);
    }
    auto c = co_await f->close();
    if (!c) co_return out(c.error(), "read", path);
    co_return std::move(v);
}

task<result<ok_t>> write_on_ring(std::string path, std::string data) {
    open_options o;
    o.read = false;
    o.write = o.create = o.truncate = true;
    auto f = co_await file::open(path, o);
    if (!f) co_return result<ok_t>(f.error(), "write", path);
    auto w = co_await f->write_all_at(std::as_bytes(std::span<const char>(data)), 0);
    if (!w) co_return result<ok_t>(w.error(), "write", path);
    auto c = co_await f->close();
    if (!c) co_return result<ok_t>(c.error(), "write", path);
    co_return ok_t{};
}

}  // namespace

task<result<std::vector<std::byte>>> read(std::string path) {
    if (ring_runs({io_op_kind::file_open, io_op_kind::file_read, io_op_kind::file_close,
                   io_op_kind::file_statx})) {
        co_return co_await read_on_ring(std::move(path));
    }
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
    if (ring_runs({io_op_kind::file_open, io_op_kind::file_write, io_op_kind::file_close})) {
        co_return co_await write_on_ring(std::move(path), std::move(data));
    }
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
    if (auto d = ring_for({io_op_kind::file_statx})) {
        metadata m;
        const long r = co_await ring_statx(std::move(d), AT_FDCWD, path, m);
        if (r < 0) co_return result<metadata>(errno_ec(static_cast<int>(-r)), "stat", path);
        co_return m;
    }
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
    if (auto d = ring_for({io_op_kind::file_rename})) {
        detail::io_file_args a;
        a.aux = static_cast<unsigned>(from.size() + 1);
        owned_buffer b(from.size() + to.size() + 2);
        std::memcpy(b.data(), from.c_str(), from.size() + 1);
        std::memcpy(b.data() + a.aux, to.c_str(), to.size() + 1);
        b.resize(b.capacity());
        ring_op op(std::move(d), io_op_kind::file_rename, a, std::move(b));
        const long r = co_await op;
        if (r < 0) {
            co_return result<ok_t>(errno_ec(static_cast<int>(-r)), "rename", from + " -> " + to);
        }
        co_return ok_t{};
    }
    auto job = on_pool(
        [from, to]() -> int { return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno; });
    auto r = co_await job;
    if (r) co_return result<ok_t>(errno_ec(r), "rename", from + " -> " + to);
    co_return ok_t{};
}

task<result<ok_t>> remove(std::string path) {
    if (auto d = ring_for({io_op_kind::file_unlink})) {
        // unlink; a directory (EISDIR, or EPERM from some file systems) is removed as one,
        // and if it is not one the first error stands.
        ring_op op(d, io_op_kind::file_unlink, {}, path_buffer(path));
        long r = co_await op;
        if (r == -EISDIR || r == -EPERM) {
            detail::io_file_args a;
            a.flags = AT_REMOVEDIR;
            ring_op dir(std::move(d), io_op_kind::file_unlink, a, path_buffer(path));
            if (const long rd = co_await dir; rd != -ENOTDIR) r = rd;
        }
        if (r < 0) co_return result<ok_t>(errno_ec(static_cast<int>(-r)), "remove", path);
        co_return ok_t{};
    }
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
