// SPDX-License-Identifier: MIT
#pragma once
// Inspection compiled out (issue 46's cost target): the stall detector, the latency histograms,
// the task dump's per-task records (id, spawn site, polls, age) and await-chain descriptions,
// and the lost-task analysis's handle records all go when BLITZ_INSPECT is 0. Only the
// benchmark's reference runtime is built that way (blitz_runtime_noinspect, run as the peer
// blitz-noinspect), so that `blitz bench` can report what leaving them on costs; the library
// users link always has them (BLITZ_INSPECT=1, the default). The macro changes the task
// header's layout: everything linked into one program must agree on it.

#ifndef BLITZ_INSPECT
#define BLITZ_INSPECT 1
#endif

namespace blitz::detail {
inline constexpr bool inspect_enabled = BLITZ_INSPECT != 0;
}  // namespace blitz::detail
