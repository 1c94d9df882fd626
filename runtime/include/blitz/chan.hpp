// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// Channels (issue 6): bounded MPMC, unbounded MPSC, oneshot, broadcast and watch.

#include "blitz/chan/broadcast.hpp"
#include "blitz/chan/channel.hpp"
#include "blitz/chan/oneshot.hpp"
#include "blitz/chan/unbounded.hpp"
#include "blitz/chan/watch.hpp"
