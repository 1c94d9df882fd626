// SPDX-License-Identifier: MIT
#pragma once
// The umbrella header: everything a blitz user needs.

#include "blitz/blocking.hpp"
#include "blitz/cancel.hpp"
#include "blitz/chan.hpp"
#include "blitz/combinators.hpp"
#include "blitz/config.hpp"
#include "blitz/join_handle.hpp"
#include "blitz/metrics.hpp"
#include "blitz/net/address.hpp"
#include "blitz/net/serve.hpp"
#include "blitz/net/tcp.hpp"
#include "blitz/net/udp.hpp"
#include "blitz/net/unix.hpp"
#include "blitz/runtime.hpp"
#include "blitz/sync.hpp"
#include "blitz/task.hpp"
#include "blitz/task_scope.hpp"
#include "blitz/time.hpp"
#include "blitz/topology.hpp"
#include "blitz/waker.hpp"
#include "blitz/yield.hpp"
