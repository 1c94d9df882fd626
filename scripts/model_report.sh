#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 19: runs every model of the lock-free cores under the model checker and writes
# results/<machine>/model.md: per model the preemption bound, the executions explored (and how
# many the sleep sets proved redundant), the longest execution, the time and the verdict, with
# each negative control's verdict beside the models; then what checks each core.
#   scripts/model_report.sh [BUILD_DIR] [OUT_DIR]     (defaults: build/release, results/<machine>)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build/release}
bin=$build/blitz_model_tests
[ -x "$bin" ] || { echo "model_report: $bin is missing (make build-release)" >&2; exit 2; }
out=${2:-results/$("$build/blitz" topo --machine-id)}
mkdir -p "$out"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
status=0
# Each model at its own bound (2: what make test runs), then every model again at bound 3.
filter='Model*-ModelLitmus.*:ModelExplorer.*'
BLITZ_MODEL_REPORT=$rows "$bin" --gtest_brief=1 --gtest_filter="$filter" || status=$?
BLITZ_MODEL_REPORT=$rows BLITZ_MODEL_BOUND=3 "$bin" --gtest_brief=1 --gtest_filter="$filter" || status=$?
{
  echo "# Model checking the lock-free cores"
  echo
  echo "Every row is one exploration by blitz's model checker (stress/model/, \`make test\` runs the"
  echo "same tests): the model's threads run as fibers, every atomic operation, fence, futex and mutex"
  echo "operation is a scheduling point, interleavings are enumerated depth-first under the preemption"
  echo "bound, loads may read any store C++'s coherence rules allow, and sleep sets skip executions"
  echo "that only reorder independent operations. What the checker does and does not model is listed"
  echo "at the top of stress/model/model.hpp. A model holds when its whole bounded space was explored"
  echo "without a failed check, deadlock or livelock; a control (a defect put in on purpose: an"
  echo "ordering weakened to relaxed, or a step left out) is caught when the exploration fails."
  echo
  echo "| model | bound | executions | redundant | longest (steps) | time (s) | verdict |"
  echo "|---|---|---|---|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$rows"
  echo
  echo "What each control's exploration found (the first failure, at the lower bound):"
  echo
  awk -F'\t' '$7 == "caught" && !seen[$1]++ { printf "- %s: %s\n", $1, $8 }' "$rows"
  echo
  echo "The test binary exited with status $status."
  echo
  echo "## What checks each core"
  echo
  sed -n '/^<!-- coverage -->/,/^<!-- end coverage -->/p' docs/verification.md | sed '1d;$d'
  echo
  echo "## Machine"
  echo
  bash scripts/machine_record.sh
} > "$out/model.md"
echo "model_report: wrote $out/model.md"
exit $status
