// SPDX-License-Identifier: MIT
#pragma once
// Native stacks for the stall detector (issue 46): a capture that may run in a signal handler,
// and a symbolizer that runs later, on an ordinary thread.

#include <cstddef>
#include <string>
#include <vector>

namespace blitz::detail {

// Writes up to `max` return addresses of the calling thread's stack into `out`, innermost first,
// skipping the first `skip` (this function and its callers inside the capture path); returns
// how many it wrote. Async-signal-safe as used here: libgcc's unwinder (_Unwind_Backtrace)
// finds each frame's unwind table through glibc's _dl_find_object, which takes no lock, and
// allocates nothing once warm_up_stack_capture() has run on some thread of the process (the
// first call loads libgcc_s's unwinder state). It unwinds through the kernel's signal frame.
std::size_t capture_stack(void** out, std::size_t max, std::size_t skip = 0) noexcept;
// Makes the first capture's one-time work happen here, outside any signal handler.
void warm_up_stack_capture() noexcept;

// One line per address: "#i 0x... name+0xoff (module)". Names come from the module's ELF
// symbol table (.symtab, else .dynsym), read from its file once and cached, so functions that
// are not exported (no -rdynamic) and coroutine clones ("[clone .resume]") are named too, and
// are demangled. An address no symbol covers shows as module+offset, which addr2line resolves.
// Thread-safe (a mutex guards the cache); not for signal handlers.
std::vector<std::string> symbolize(void* const* pcs, std::size_t n);
// The demangled name of the function at or around `entry` (a function's address, such as a
// coroutine frame's resume function), without an offset; "??" when no module holds it.
std::string function_name(void* entry);

}  // namespace blitz::detail
