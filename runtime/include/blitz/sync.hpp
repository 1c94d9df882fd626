// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// Async synchronization primitives for tasks (issue 6): semaphore, mutex, rwlock, notify,
// barrier, once_cell, cancellation_token.

#include "blitz/sync/cancellation_token.hpp"
#include "blitz/sync/mutex.hpp"
#include "blitz/sync/notify.hpp"
#include "blitz/sync/once_cell.hpp"
#include "blitz/sync/semaphore.hpp"
