// SPDX-License-Identifier: MIT
#pragma once
// The I/O driver as the public socket types see it: registering a file descriptor, reading its
// readiness, and waiting for it (issue 16). The driver itself is in runtime/src/io/.

#include <cstdint>
#include <memory>

#include "blitz/buffer.hpp"
#include "blitz/detail/faults.hpp"
#include "blitz/detail/wait_list.hpp"
#include "blitz/waker.hpp"

namespace blitz::detail {

class io_driver;
class scheduled_io;

// Readiness bits of a registered descriptor. The closed and error bits stay once seen; readable
// and writable are cleared by a caller that met EAGAIN.
enum io_ready_bits : std::uint32_t {
    io_readable = 1,
    io_writable = 2,
    io_read_closed = 4,
    io_write_closed = 8,
    io_error = 16,
    io_shutdown = 32,  // the runtime is shutting down: every wait ends
};
enum class io_direction : std::uint8_t { read, write };

// What a reader saw: the bits relevant to its direction and the descriptor's event count, so a
// clear after EAGAIN cannot erase an event that arrived after the read.
struct io_ready_event {
    std::uint32_t ready = 0;
    std::uint32_t seq = 0;
};

// The I/O driver of the runtime running the calling task. Throws std::logic_error on a plain
// thread, and on a runtime built with io_backend = none.
io_driver& current_io();
// Another reference to `d`: a socket keeps its driver alive (it may outlive its runtime).
std::shared_ptr<io_driver> io_share(io_driver& d);
// Registers `fd` (non-blocking, open) for readiness events. Throws std::system_error.
scheduled_io* io_register(io_driver& d, int fd);
// Ends the registration; call before closing the fd. Waiters must be gone. The block is freed
// once the backend can no longer name it.
void io_deregister(io_driver& d, scheduled_io* s) noexcept;

io_ready_event io_poll_ready(const scheduled_io* s, io_direction dir) noexcept;
// The descriptor `s` was registered for (the task dump names it).
int io_fd(const scheduled_io* s) noexcept;
// After EAGAIN: clears the direction's readable or writable bit unless a newer event came.
void io_clear_ready(scheduled_io* s, io_ready_event ev) noexcept;
// Links `node` (with waker `w`) to wait for `dir`; false, with nothing linked, if the direction
// is ready now. The node's `done` is set (release) when readiness arrives.
bool io_wait(scheduled_io* s, io_direction dir, wait_node& node, waker w);
// Unlinks `node` if it is still linked.
void io_cancel_wait(scheduled_io* s, wait_node& node) noexcept;

// Closes `fd`, registered as `s`: at once when no completion operation uses it, otherwise
// after the last one's final completion (the in-flight ones are cancelled), so a reused
// descriptor number never meets a stale operation (INVARIANTS.md R5).
void io_close(io_driver& d, scheduled_io* s, int fd) noexcept;
// Bytes an abandoned receive got after its task stopped waiting (R4): a read takes them before
// asking the kernel. Copies up to `n` into `data` and returns how many; 0 when none are kept;
// -EAGAIN when none are kept but a completion-mode receive is in flight (it may yet leave
// some, so the read must wait for readiness rather than overtake it).
long io_take_unread(scheduled_io* s, void* data, std::size_t n) noexcept;

// Completion-mode operations (io_uring): the kernel reads or writes an owned_buffer kept in a
// driver-owned operation state until the final completion (R2, R3).
struct io_op_state;
enum class io_op_kind : std::uint8_t {
    recv,  // into the buffer's whole capacity; the result is the byte count
    send,  // the buffer's bytes; the result is the byte count written
    // A descriptor's multishot pooled receive (R7): no awaiter; each completion queues a pool
    // buffer on the descriptor, and read_pooled and the other reads take them.
    recv_multishot,
    // File operations (blitz/fs.hpp on io_uring): no registered descriptor; what they name is
    // in io_file_args and in the buffer (paths NUL-terminated). The result is -errno or:
    file_open,    // openat(AT_FDCWD, path, flags, mode): the new descriptor
    file_read,    // pread(fd, into the buffer's capacity, offset): bytes
    file_write,   // pwrite(fd, the buffer's bytes, offset): bytes
    file_statx,   // statx into the buffer's first sizeof(struct statx) bytes, of the path that
                  // follows them (AT_FDCWD), or of fd when that path is empty: 0
    file_fsync,   // fsync(fd): 0
    file_close,   // close(fd): 0
    file_rename,  // renameat(path, the second path at buffer offset `aux`): 0
    file_unlink,  // unlinkat(AT_FDCWD, path, flags): 0
    // A listener's multishot accept (worker rings, issue 44): no awaiter; each completion queues
    // an accepted descriptor on the listener, and accept takes them in order.
    accept_multishot,
    // A send of the buffer's bytes by SEND_ZC (config io_send_zc_threshold): the kernel sends
    // from the buffer without copying it and posts a second completion (the notification) once
    // it no longer reads the buffer; that one is the final completion. The result is the byte
    // count written, as for send.
    send_zc,
};
struct io_file_args {
    int fd = -1;
    int flags = 0;
    unsigned mode = 0;
    unsigned aux = 0;
    std::uint64_t offset = 0;
};
// True when the driver's backend runs completion operations (io_uring); the epoll backend
// runs the same operations readiness-based.
bool io_completion_mode(const io_driver& d) noexcept;
// Starts `kind` on `s` with `buf` (moved into the state) and `w` to wake at completion.
// Returns null, leaving `buf` and `w` with the caller, when the driver is shut down or `s` is
// closing: the operation then ends with ECANCELED.
io_op_state* io_op_start(io_driver& d, scheduled_io* s, io_op_kind kind, owned_buffer& buf,
                         waker& w);
// The I/O driver of the runtime running the calling task; null on a plain thread or when the
// runtime has none.
io_driver* current_io_if_any() noexcept;
// True when `d` runs the file operation `kind` on io_uring: the backend is io_uring, its probe
// found the opcode, and config fs_io_uring is on.
bool io_file_op_supported(const io_driver& d, io_op_kind kind) noexcept;
// Starts the file operation `kind` (a file_* kind that io_file_op_supported accepts), as
// io_op_start does; null (`buf` and `w` kept by the caller) when the driver is shut down. An
// abandoned open whose descriptor arrives late has it closed by the driver.
io_op_state* io_file_op_start(io_driver& d, io_op_kind kind, const io_file_args& a,
                              owned_buffer& buf, waker& w);
// True once the final completion arrived (acquire: the result and the buffer are visible).
bool io_op_done(const io_op_state* op) noexcept;
// After io_op_done: true when the operation's linked timeout ended it (it was started under a
// timeout(), io_deadline.hpp, and was cancelled once the deadline had passed). Its awaiter then
// stays suspended: the timeout's own timer, due now, resumes the select and drops it, so the
// caller sees timed_out() and never the kernel's ECANCELED.
bool io_op_expired(const io_op_state* op) noexcept;
// After io_op_done: the result (bytes, or -errno), the buffer back in `buf`; frees the state.
long io_op_finish(io_driver& d, io_op_state* op, owned_buffer& buf) noexcept;
// The awaiter goes away before the completion was consumed (abort, select, timeout): cancels
// the operation if it is still in the kernel; the driver settles its late result (received
// bytes kept for the next read, R4) and frees the state at the final completion.
void io_op_abandon(io_driver& d, io_op_state* op) noexcept;

// One attempt of a pooled receive (stream_socket::read_pooled): the oldest kept bytes or
// queued pool buffer into `out` (returns its size), the end a multishot receive met (0 or
// -errno), or, with nothing kept: -EAGAIN after arming the descriptor's multishot receive
// (the driver wakes the readers when it fills a buffer) or while another receive is in
// flight; when no pool buffer is free (or there is no pool: epoll), a readiness recv into
// `heap` (allocated here at the pool's buffer size) handed over in `out`.
long io_pooled_attempt(io_driver& d, scheduled_io* s, int fd, pooled_buffer& out,
                       owned_buffer& heap) noexcept;

// One attempt of a stream's read into the caller's span: bytes kept by R4 and queued pool
// buffers first, copied out; then, on a worker whose own io_uring ring has a buffer pool, the
// end a multishot receive met (0 or -errno), or -EAGAIN after arming the descriptor's
// multishot receive on that ring (the kernel fills pool buffers as data arrives, and the read
// copies from them: it never hands the kernel a pointer into the caller's memory, R2) or while
// another receive is in flight; elsewhere (epoll, a plain thread, no pool, no free buffer) a
// readiness recv into the span.
// `syscall` says whether the result came from a recv(2) on `fd` (false: from queued bytes).
long io_span_attempt(io_driver& d, scheduled_io* s, int fd, void* data, std::size_t n,
                     bool& syscall) noexcept;
// True when a stream's read (a listener's accept) should attempt before any readiness is known
// (io_uring with worker rings: readiness polls are armed only once a task waits, and the first
// attempt arms the multishot receive or accept).
bool io_speculative_reads(const io_driver& d) noexcept;
// One attempt of an accept: a descriptor the listener's multishot accept queued (accepted
// non-blocking and close-on-exec), the error that ended that accept (once), or -EAGAIN after
// arming it on the calling worker's ring (the driver wakes the waiters when it queues one);
// elsewhere (epoll, a plain thread, a kernel without multishot accept) an accept4.
long io_accept_attempt(io_driver& d, scheduled_io* s, int fd) noexcept;

#if BLITZ_FAULTS
// The calling worker's runtime's I/O negative controls (false on a plain thread).
bool fault_io_drop_orphan_data() noexcept;
bool fault_io_no_msg_nosignal() noexcept;
bool fault_io_eof_as_error() noexcept;
bool fault_io_clear_ignores_seq() noexcept;
// O16's window: runs the runtime's io_after_eagain hook, if any, for a read of `s` (registered
// with `d`) that met EAGAIN on the socket.
void fault_io_after_eagain(io_driver& d, scheduled_io* s);
// O12's control: true while the calling thread destroys frames of a runtime that shuts down
// with io_leak_at_shutdown set.
bool fault_io_leak_at_shutdown() noexcept;
#endif

// The readiness bits that end a wait in `dir`.
constexpr std::uint32_t io_mask(io_direction dir) noexcept {
    return dir == io_direction::read ? (io_readable | io_read_closed | io_error | io_shutdown)
                                     : (io_writable | io_write_closed | io_error | io_shutdown);
}

}  // namespace blitz::detail
