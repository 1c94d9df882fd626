#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 47, item 9: misuse that must not compile does not, and says what to write instead.
#   check_misuse.sh CXX INCLUDE_DIR [GENERATED_INCLUDE_DIR]
# Compiles tests/misuse/misuse.cpp once with no case (the correct forms: must compile), then
# once per case, each of which must fail with blitz's message for it.
set -uo pipefail
cxx=$1 inc=$2 gen=${3:-$2}
src="$(cd "$(dirname "$0")/.." && pwd)/tests/misuse/misuse.cpp"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compile() { "$cxx" -std=c++20 -fsyntax-only -I"$inc" -I"$gen" "$@" "$src" > "$tmp/out" 2>&1; }
status=0
# The correct forms are compiled to code: g++ 12 reports some coroutine errors (a copied
# awaiter) only when it lowers the coroutine, never under -fsyntax-only.
if ! "$cxx" -std=c++20 -c -o "$tmp/ok.o" -I"$inc" -I"$gen" "$src" > "$tmp/out" 2>&1; then
  echo "check_misuse: the correct forms do not compile:"; grep -m5 "error" "$tmp/out"; status=1
fi
in_place="in the expression that makes it"
foreign="a task can await only blitz's awaitables"
branch="a branch can be only one of blitz's awaitables"
for c in "SELECT_MOVED:$in_place" "SELECT_LVALUE:$in_place" "RACE_MOVED:$in_place" \
         "TIMEOUT_MOVED:$in_place" "FOREIGN_AWAITABLE:$foreign" \
         "FOREIGN_USER_AWAITABLE:$foreign" "FOREIGN_SELECT_BRANCH:$branch"; do
  name=${c%%:*} want=${c#*:}
  if compile "-DMISUSE_$name"; then
    echo "check_misuse: MISUSE_$name compiles"; status=1
  elif ! grep -qF "$want" "$tmp/out"; then
    echo "check_misuse: MISUSE_$name fails without blitz's message ('$want'):"
    grep -m3 "error" "$tmp/out"; status=1
  fi
done
[ $status -eq 0 ] && echo "check_misuse: 7 misuses refused with their message; the correct forms compile"
exit $status
