#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerates every committed result of this machine at one commit (`make results`), in the
# order a quiet machine needs: nothing else should run meanwhile. Each step's wall time goes to
# results/<machine>/regenerated.md with the commit, so the README can quote both.
#   scripts/regenerate_results.sh [--skip-mutants]
# About 2 hours on epyc-2c (2 vCPUs): conformance --full, the full and quick benchmark
# reports, the I/O and file/process rows, the compiler comparison, the model checker's models
# and the mutation run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mutants=1
[ "${1:-}" = "--skip-mutants" ] && mutants=0
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "regenerate_results: the tree has uncommitted changes; results must name a clean commit" >&2
  exit 2
fi
# Fail now, not after the benchmarks, if a mutant no longer applies to the tree.
[ $mutants -eq 1 ] && python3 scripts/mutate.py --check
make build-release build-release-gcc peers
out=results/$(./build/release/blitz topo --machine-id)
log=$out/regenerated.md
commit=$(git rev-parse --short HEAD)
mkdir -p "$out"
printf '# Results regenerated at %s\n\n| step | command | wall time |\n|---|---|---|\n' "$commit" > "$log"
step() {
  local name=$1
  shift
  echo "== regenerate_results: $name: $*"
  local t0
  t0=$(date +%s)
  "$@"
  printf '| %s | `%s` | %d s |\n' "$name" "$*" $(( $(date +%s) - t0 )) >> "$log"
}
step conformance ./build/release/blitz conformance --full --out "$out"
step bench ./build/release/blitz bench --out "$out"
step bench-quick ./build/release/blitz bench --quick --out "$out/quick"
step io python3 scripts/bench_io.py --out "$out"
step fsproc python3 scripts/bench_fsproc.py --out "$out"
# Busy mode (issue 20): busy_vs_shared on the echo server, and the scheduler rows with the
# blitz-busy peer (pinned: busy mode needs it; 2 workers, one per CPU here).
step busy python3 scripts/bench_busy.py --out "$out"
step busy-sched ./build/release/blitz bench --workers 2 --repetitions 5 --pin compact \
  --peers busy --no-plots --out "$out/busy-sched"
# The compiler comparison: the g++ build's blitz against the clang build's runner, interleaved
# (results/<machine>/compilers.md quotes its table: update the numbers there from it).
step compilers ./build/release-gcc/blitz bench --quick --peers tokio \
  --baseline build/release/blitz-runner --out "$out/compilers"
step model bash scripts/model_report.sh build/release "$out"
[ $mutants -eq 1 ] && step mutants python3 scripts/mutate.py
step report ./build/release/blitz report
echo "regenerate_results: done; see $log"
