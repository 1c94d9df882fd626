// SPDX-License-Identifier: MIT
#pragma once
// The I/O driver as the public socket types see it: registering a file descriptor, reading its
// readiness, and waiting for it (issue 16). The driver itself is in runtime/src/io/.

#include <cstdint>
#include <memory>

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
// After EAGAIN: clears the direction's readable or writable bit unless a newer event came.
void io_clear_ready(scheduled_io* s, io_ready_event ev) noexcept;
// Links `node` (with waker `w`) to wait for `dir`; false, with nothing linked, if the direction
// is ready now. The node's `done` is set (release) when readiness arrives.
bool io_wait(scheduled_io* s, io_direction dir, wait_node& node, waker w);
// Unlinks `node` if it is still linked.
void io_cancel_wait(scheduled_io* s, wait_node& node) noexcept;

#if BLITZ_FAULTS
// The calling worker's runtime's I/O negative controls (false on a plain thread).
bool fault_io_drop_orphan_data() noexcept;
bool fault_io_no_msg_nosignal() noexcept;
bool fault_io_eof_as_error() noexcept;
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
