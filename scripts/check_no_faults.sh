#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# INVARIANTS A4: the library users link carries none of the conformance suite's faults. Its
# proxy: the faults build's two fault lookups (K5's and X7's, task/context.cpp) exist only when
# BLITZ_FAULTS=1, so their symbols must be absent from LIB.
# usage: check_no_faults.sh LIB   (exit 1 when a fault symbol is found)
set -euo pipefail
lib=$1
if nm -C "$lib" 2>/dev/null | grep -E 'fault_drop_exceptions|fault_select_completes_losers' >/dev/null; then
    echo "check_no_faults: $lib carries the faults build's fault lookups"
    exit 1
fi
echo "check_no_faults: $lib has no fault lookups"
