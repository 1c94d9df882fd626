// SPDX-License-Identifier: MIT
// The I/O driver's public side (blitz/detail/io_api.hpp): what sockets, files and the fault
// hooks of the conformance checkers call, each a thin step into io_driver, scheduled_io or
// io_ops.

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>

#include "blitz/detail/context.hpp"
#include "blitz/detail/faults.hpp"
#include "io/io_driver.hpp"
#include "io/op_state.hpp"
#include "io/scheduled_io.hpp"
#include "task/context_internal.hpp"

namespace blitz::detail {

io_driver& current_io() {
    const runtime_context* r = current_runtime();
    if (!r) {
        throw std::logic_error(
            "blitz: sockets need a runtime: create and await them inside a blitz task");
    }
    if (!r->io) {
        throw std::logic_error("blitz: this runtime has no I/O driver (config io_backend = none)");
    }
    return *r->io;
}

scheduled_io* io_register(io_driver& d, int fd) { return d.add(fd); }
void io_deregister(io_driver& d, scheduled_io* s) noexcept { d.remove(s); }
int io_fd(const scheduled_io* s) noexcept { return s->fd(); }

io_ready_event io_poll_ready(const scheduled_io* s, io_direction dir) noexcept {
    return s->poll(dir);
}
void io_clear_ready(scheduled_io* s, io_ready_event ev) noexcept { s->clear(ev); }
bool io_wait(scheduled_io* s, io_direction dir, wait_node& node, waker w) {
    if (!s->wait(dir, node, std::move(w))) return false;
    if (s->lazy) s->lazy->wait_armed(s, dir);
    return true;
}
bool io_speculative_reads(const io_driver& d) noexcept { return d.speculative_reads(); }
void io_cancel_wait(scheduled_io* s, wait_node& node) noexcept { s->cancel_wait(node); }
std::shared_ptr<io_driver> io_share(io_driver& d) { return d.shared_from_this(); }
void io_close(io_driver& d, scheduled_io* s, int fd) noexcept { d.close(s, fd); }
long io_take_unread(scheduled_io* s, void* data, std::size_t n) noexcept {
    // Pending first: a receive that settles between the two looks would otherwise leave its
    // bytes behind while the caller reads newer ones from the kernel. Seen not pending, no
    // receive is in the kernel (the caller is the stream's one reader), so no bytes can be
    // kept after this look.
    const bool pending = s->recv_pending();
    if (const std::size_t k = s->received().take(data, n)) return static_cast<long>(k);
    return pending ? -EAGAIN : 0;
}
bool io_completion_mode(const io_driver& d) noexcept { return d.completion_ops(); }
io_driver* current_io_if_any() noexcept {
    const runtime_context* r = current_runtime();
    return r ? r->io : nullptr;
}
bool io_file_op_supported(const io_driver& d, io_op_kind kind) noexcept {
    return d.runs_file_op(kind);
}
io_op_state* io_file_op_start(io_driver& d, io_op_kind kind, const io_file_args& a,
                              owned_buffer& buf, waker& w) {
    return d.start_file(kind, a, buf, w);
}
io_op_state* io_op_start(io_driver& d, scheduled_io* s, io_op_kind kind, owned_buffer& buf,
                         waker& w) {
    return d.start(s, kind, buf, w);
}
bool io_op_done(const io_op_state* op) noexcept { return op->finished(); }
bool io_op_expired(const io_op_state* op) noexcept {
    if (!op->linked || op->result != -ECANCELED) return false;
    // A cancel before the deadline (a close, the shutdown) is an ordinary result.
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
    const auto deadline = std::int64_t{op->link_deadline.tv_sec} * 1'000'000'000 +
                          std::int64_t{op->link_deadline.tv_nsec};
    return now >= deadline;
}
long io_op_finish(io_driver& d, io_op_state* op, owned_buffer& buf) noexcept {
    return d.finish(op, buf);
}
void io_op_abandon(io_driver& d, io_op_state* op) noexcept { d.abandon(op); }
long io_pooled_attempt(io_driver& d, scheduled_io* s, int fd, pooled_buffer& out,
                       owned_buffer& heap) noexcept {
    return d.pooled_attempt(s, fd, out, heap);
}
long io_span_attempt(io_driver& d, scheduled_io* s, int fd, void* data, std::size_t n,
                     bool& syscall) noexcept {
    return d.span_attempt(s, fd, data, n, syscall);
}
long io_accept_attempt(io_driver& d, scheduled_io* s, int fd) noexcept {
    return d.accept_attempt(s, fd);
}

#if BLITZ_FAULTS
bool io_fault(bool testing::runtime_faults::* knob) noexcept {
    const runtime_context* r = current_runtime();
    return r && r->cfg && r->cfg->debug.*knob;
}
bool fault_io_drop_orphan_data() noexcept {
    return io_fault(&testing::runtime_faults::io_drop_orphan_data);
}
bool fault_io_no_msg_nosignal() noexcept {
    return io_fault(&testing::runtime_faults::io_no_msg_nosignal);
}
bool fault_io_leak_at_shutdown() noexcept {
    const runtime_context* r = draining_runtime();
    return r && r->cfg && r->cfg->debug.io_leak_at_shutdown;
}
bool fault_io_eof_as_error() noexcept {
    return io_fault(&testing::runtime_faults::io_eof_as_error);
}
bool fault_io_clear_ignores_seq() noexcept {
    return io_fault(&testing::runtime_faults::io_clear_ignores_seq);
}
void fault_io_after_eagain(io_driver& d, scheduled_io* s) {
    const runtime_context* r = current_runtime();
    if (!r || !r->cfg || !r->cfg->debug.io_after_eagain) return;
    r->cfg->debug.io_after_eagain([&d, s] {
        if (d.try_lock()) {
            (void)d.turn(std::chrono::nanoseconds(0));
            d.unlock();
        }
        return s->poll(io_direction::read).seq;
    });
}
#endif

}  // namespace blitz::detail
