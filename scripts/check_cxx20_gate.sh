#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 18: every public header compiles on its own under -std=c++20, and under -std=c++17 it
# gives blitz's one message and stops (at most the #error and the fatal stop: no cascade).
#   check_cxx20_gate.sh CXX INCLUDE_DIR [HEADER...]   (HEADER: e.g. blitz/time.hpp; all if none)
# With CXX20_GATE_ONLY=1 only the C++17 message is checked (the part that depends on the
# compiler: a second compiler's build over the same standard library runs only that).
set -uo pipefail
cxx=$1 inc=$2
shift 2
headers=()
for rel in "$@"; do headers+=("$inc/$rel"); done
[ ${#headers[@]} -gt 0 ] ||
  headers=("$inc"/blitz/*.hpp "$inc"/blitz/net/*.hpp "$inc"/blitz/chan/*.hpp "$inc"/blitz/sync/*.hpp)
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in "${headers[@]}"; do
  rel=${h#"$inc"/}
  printf '#include "%s"\n' "$rel" > "$tmp/t.cpp"
  faults=()
  [ "$rel" = blitz/testing.hpp ] && faults=(-DBLITZ_FAULTS=1)  # the faults build's header
  if [ "${CXX20_GATE_ONLY:-0}" != 1 ] &&
     ! "$cxx" -std=c++20 -fsyntax-only "${faults[@]}" -I"$inc" "$tmp/t.cpp" > "$tmp/out20" 2>&1; then
    echo "$rel: does not compile on its own under -std=c++20:"; head -5 "$tmp/out20"; status=1
  fi
  "$cxx" -std=c++17 -fsyntax-only -I"$inc" "$tmp/t.cpp" > "$tmp/out17" 2>&1
  errors=$(grep -cE ": (fatal )?error:" "$tmp/out17")
  if ! grep -q "blitz needs C++20 with coroutines" "$tmp/out17" || [ "$errors" -gt 2 ]; then
    echo "$rel: under -std=c++17, $errors error lines instead of blitz's one message:"
    grep -E ": (fatal )?error:" "$tmp/out17" | head -3; status=1
  fi
done
what="self-contained, and one message without C++20"
[ "${CXX20_GATE_ONLY:-0}" = 1 ] && what="one message without C++20"
[ $status -eq 0 ] && echo "check_cxx20_gate: ${#headers[@]} public headers: $what"
exit $status
