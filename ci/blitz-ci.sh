#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CI job users copy (ci/github/blitz.yml and ci/gitlab/blitz.gitlab-ci.yml call it): builds
# blitz, runs the quick conformance suite with a JUnit report, runs the stress tests under
# ThreadSanitizer for a while, and leaves the tables in one folder for the CI to upload.
# `make test` runs this same script on the builds it already made (ctest ci.script).
#
#   ci/blitz-ci.sh [--out DIR] [--stress-seconds N] [--no-deps]
#                  [--build-dir DIR] [--stress-build-dir DIR]   (reuse builds: nothing is built)
#                  [--conformance "ARGS"] [--stress-filter GTEST_FILTER]
#
# Exit status: 0 everything passed; otherwise the first failing step's status (conformance:
# 1 a failed check, 3 a hang; stress: gtest's), after every step has run and written its table.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=ci-results stress_seconds=60 deps=1 build_dir="" stress_dir="" conf_args="" filter="*"
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --stress-seconds) stress_seconds=$2; shift 2 ;;
    --no-deps) deps=0; shift ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --stress-build-dir) stress_dir=$2; shift 2 ;;
    --conformance) conf_args=$2; shift 2 ;;
    --stress-filter) filter=$2; shift 2 ;;
    -h|--help) sed -n '3,15p' "$0"; exit 0 ;;
    *) echo "blitz-ci: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $stress_seconds in ''|*[!0-9]*) echo "blitz-ci: --stress-seconds needs a count" >&2; exit 2 ;; esac
mkdir -p "$out" && out=$(cd "$out" && pwd) || { echo "blitz-ci: cannot create '$out'" >&2; exit 2; }
status=0
step() { echo "== blitz-ci: $*"; }
fail() { [ $status -eq 0 ] && status=$1; echo "== blitz-ci: FAILED ($2, exit $1)"; }

if [ $deps -eq 1 ]; then
  step "dependencies (scripts/deps.sh)"
  bash "$root/scripts/deps.sh" || exit $?
fi
if [ -z "$build_dir" ]; then
  step "build: release"
  (cd "$root" && cmake --preset release > /dev/null && cmake --build --preset release) || exit $?
  build_dir=$root/build/release
fi
if [ -z "$stress_dir" ]; then
  step "build: tsan (ThreadSanitizer)"
  (cd "$root" && cmake --preset tsan > /dev/null && cmake --build --preset tsan --target blitz_stress) ||
    exit $?
  stress_dir=$root/build/tsan
fi

step "conformance --quick with a JUnit report"
# shellcheck disable=SC2086  # the extra arguments are meant to split
"$build_dir/blitz" conformance --quick $conf_args --out "$out/conformance" \
  --junit "$out/conformance-junit.xml" > "$out/conformance.log" 2>&1
rc=$?
tail -3 "$out/conformance.log"
[ $rc -eq 0 ] || fail $rc "conformance; see $out/conformance.log"

step "stress (${stress_seconds} s, $stress_dir/blitz_stress, filter '$filter')"
# Whole passes of the stress tests until the time is up (at least one); each must pass.
start=$(date +%s) passes=0
while :; do
  "$stress_dir/blitz_stress" --gtest_brief=1 --gtest_filter="$filter" \
    --gtest_output="xml:$out/stress-junit.xml" >> "$out/stress.log" 2>&1
  rc=$?
  passes=$((passes + 1))
  if [ $rc -ne 0 ]; then fail $rc "stress pass $passes; see $out/stress.log"; break; fi
  [ $(( $(date +%s) - start )) -ge "$stress_seconds" ] && break
done
echo "stress: $passes pass(es) in $(( $(date +%s) - start )) s" | tee -a "$out/stress.log"

step "tables in $out"
ls "$out"
exit $status
