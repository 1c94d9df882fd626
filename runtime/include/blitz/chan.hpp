#pragma once
// Channels (issue 6): the bounded MPMC channel so far; oneshot, unbounded, broadcast and watch
// follow.

#include "blitz/chan/channel.hpp"
