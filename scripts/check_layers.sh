#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The runtime's dependency direction (docs/DESIGN.md, "Layers"), checked over #include lines:
#
#   base <- task <- sched <- {time, io, sync, blocking, topo} <- rt
#
# A file may include headers of its own subsystem and of any layer below its own, never of a
# layer above and never of a sibling on its own layer. Unit tests (*_test.cpp) and test helpers
# are not part of the library and are not checked here.
#
# usage: check_layers.sh [ROOT] [--table]
#   ROOT     the repository (default: this script's parent folder)
#   --table  also print the subsystem-to-subsystem include edges (counts)
# It also checks that no library file names std::atomic outside the atomic facade (INVARIANTS A3).
# Exit status: 0 when every edge points down, 1 otherwise (each bad edge is printed).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
table=0
for a in "$@"; do
    case "$a" in
    --table) table=1 ;;
    *) root=$a ;;
    esac
done
cd "$root"

# The subsystem a path (relative to the root, or an include spelled "dir/file") belongs to.
subsystem() {
    local p=${1#runtime/src/}
    p=${p#runtime/include/}
    case "$p" in
    blitz/testing/gtest.hpp) echo rt ;;  # BLITZ_TEST: a runtime per test (issue 47)
    blitz/config.hpp | blitz/metrics.hpp | blitz/probe.hpp | blitz/topology.hpp | blitz/stall.hpp | blitz/dump.hpp) echo base ;;
    blitz/buffer.hpp) echo base ;;
    blitz/detail/faults.hpp | blitz/detail/inspect.hpp | blitz/detail/requires_cxx20.hpp | blitz/detail/atomic.hpp | blitz/detail/mutex.hpp | blitz/detail/holder_list.hpp | blitz/testing/*) echo base ;;
    blitz/waker.hpp | blitz/task.hpp | blitz/join_handle.hpp | blitz/yield.hpp | blitz/cancel.hpp | blitz/coop.hpp) echo task ;;
    blitz/detail/context.hpp | blitz/detail/task_header.hpp | blitz/detail/task_state.hpp) echo task ;;
    blitz/detail/select_scope.hpp | blitz/detail/select_branch.hpp | blitz/detail/spawn.hpp) echo task ;;
    blitz/detail/wait_list.hpp | blitz/detail/io_deadline.hpp | blitz/detail/join_set_core.hpp) echo task ;;
    blitz/time.hpp | blitz/detail/timer_api.hpp | blitz/detail/timer_slot.hpp) echo time ;;
    blitz/sync.hpp | blitz/sync/* | blitz/chan.hpp | blitz/chan/*) echo sync ;;
    blitz/blocking.hpp) echo blocking ;;
    blitz/net/serve.hpp) echo rt ;;  # joins io (sockets) with sync and time
    blitz/buffered.hpp | blitz/net/* | blitz/detail/io_api.hpp | blitz/detail/io_op.hpp | blitz/signal.hpp | blitz/process.hpp) echo io ;;
    blitz/runtime.hpp | blitz/task_scope.hpp | blitz/join_set.hpp | blitz/local_set.hpp | blitz/combinators.hpp | blitz/blitz.hpp | blitz/fs.hpp) echo rt ;;
    blitz/testing.hpp) echo rt ;;
    blitz/*) echo "unmapped:$p" ;;
    probe/*) echo base ;;
    */*) echo "${p%%/*}" ;;
    *) echo "unmapped:$p" ;;
    esac
}

level() {
    case "$1" in
    base) echo 0 ;;
    task) echo 1 ;;
    sched) echo 2 ;;
    time | io | sync | blocking | topo) echo 3 ;;
    rt) echo 4 ;;
    *) echo -1 ;;
    esac
}

is_test_file() {
    case "$1" in
    *_test.cpp | */test_support.hpp | */test_event.hpp | */wheel_model.hpp) return 0 ;;
    esac
    return 1
}

bad=0
declare -A edges=()
while IFS= read -r f; do
    is_test_file "$f" && continue
    from=$(subsystem "$f")
    lf=$(level "$from")
    if [ "$lf" -lt 0 ]; then
        echo "check_layers: $f: no layer for subsystem '$from' (add it to scripts/check_layers.sh)"
        bad=1
        continue
    fi
    while IFS= read -r inc; do
        case "$inc" in
        blitz/* | */*) ;;
        *) continue ;;  # a sibling file of the conformance or bench folders, not the runtime's
        esac
        [ -e "runtime/src/$inc" ] || [ -e "runtime/include/$inc" ] || continue
        to=$(subsystem "$inc")
        lt=$(level "$to")
        edges["$from -> $to"]=$((${edges["$from -> $to"]:-0} + 1))
        [ "$from" = "$to" ] && continue
        if [ "$lt" -lt 0 ] || [ "$lt" -ge "$lf" ]; then
            echo "check_layers: $f includes \"$inc\": $from (layer $lf) must not depend on $to (layer $lt)"
            bad=1
        fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find runtime/src runtime/include -name '*.cpp' -o -name '*.hpp' | sort)

# A3: every lock-free word goes through the atomic facade (blitz/detail/atomic.hpp), so a model
# checker can drive all of them; no other library file names std::atomic.
while IFS= read -r hit; do
    f=${hit%%:*}
    is_test_file "$f" && continue
    echo "check_layers: $hit: use detail::atomic (blitz/detail/atomic.hpp), not std::atomic"
    bad=1
done < <(grep -rn --include='*.hpp' --include='*.cpp' -e 'std::atomic' runtime/src runtime/include |
    grep -v '^runtime/include/blitz/detail/atomic.hpp:' || true)

if [ "$table" = 1 ]; then
    echo "| from | to | includes |"
    echo "|---|---|---:|"
    for e in "${!edges[@]}"; do
        echo "| ${e% -> *} | ${e#* -> } | ${edges[$e]} |"
    done | sort
fi
if [ "$bad" != 0 ]; then
    echo "check_layers: FAILED (direction: base <- task <- sched <- {time, io, sync, blocking, topo} <- rt; atomics: blitz/detail/atomic.hpp only)"
    exit 1
fi
echo "check_layers: every include points down the layers; every atomic goes through the facade"
