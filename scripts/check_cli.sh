#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 18: the blitz command follows git's and cargo's conventions. Each line below runs blitz
# and expects an exit status and a pattern in its output (stdout and stderr together).
#   check_cli.sh BLITZ
set -uo pipefail
blitz=$1
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $blitz in /*) ;; *) blitz=$PWD/$blitz ;; esac
cd "$tmp" || exit 1  # runs that write their default results/ folder write it here

# expect STATUS PATTERN ARGS...
expect() {
  local want=$1 pattern=$2
  shift 2
  "$blitz" "$@" > "$tmp/out" 2>&1
  local got=$?
  if [ "$got" != "$want" ] || ! grep -qE -- "$pattern" "$tmp/out"; then
    echo "FAIL: blitz $* -> exit $got (want $want), output without /$pattern/:"
    head -5 "$tmp/out" | sed 's/^/    /'
    status=1
  fi
}

expect 0 'usage: blitz <command>'                           # alone: the usage, exit 0
expect 0 '^blitz [0-9]+\.[0-9]+\.[0-9]+'  --version
expect 0 'usage: blitz <command>'         --help
for sub in demo conformance bench compare report stress topo; do
  expect 0 "usage: blitz $sub"            "$sub" --help    # every subcommand has its own help
done
expect 0 'usage: blitz conformance'       help conformance
expect 2 'unknown command'                bogus
expect 2 "unknown option '--fanout'"      topo --fanout 3  # a flag foreign to the subcommand
expect 2 "unknown option '--quick'"       topo --quick
expect 2 "unknown option '--repetitions'" conformance --repetitions 3
expect 2 'positive integer.*-3'           demo --workers -3   # negatives refused, not wrapped
expect 2 'positive integer.*-3'           demo --workers=-3
expect 2 'positive integer.*0'            conformance --workers 1,0
expect 2 'up to 4096'                     conformance --workers 4097  # the runtime's limit, up front
expect 2 'positive integer'               bench --repetitions 99999999999999999999
expect 2 'takes no value'                 conformance --quick=yes
expect 2 'needs a value'                  conformance --seed
expect 2 "no checker 'Z9'"                conformance --filter Z9
expect 2 'does not exist'                 conformance --junit /nonexistent/dir/r.xml
expect 2 'not a directory'                conformance --out /etc/hostname
expect 2 'only one of'                    conformance --format json --junit -
expect 2 'text or json'                   bench --format yaml
expect 2 'matches no workload'            bench --smoke --filter '^nothing$'
expect 2 'expects two reports'            compare only-one.json
expect 0 '^Q1[[:space:]]'                 conformance --list
expect 0 '^[a-z0-9]+-[0-9]+c'             topo --machine-id
expect 0 '^spawn_many_local[[:space:]]'   bench --list
expect 0 '^spawn_tree$'                   stress --list
expect 2 'matches no workload'            stress --only nothing
expect 2 'list-faults'                    stress --fault nothing
expect 2 'positive integer.*-1'           stress --seconds -1
# --flag=value and --flag value are the same; - is stdout.
expect 0 '"pass": true'                   conformance --quick --filter=Q1 --workers=1 --format=json
expect 0 '<testcase classname="conformance.Q1" name="W=1"' \
                                          conformance --quick --filter Q1 --workers 1 --junit -
expect 0 '^# Conformance \(quick\)'       conformance --quick --filter Q1 --workers 1 --out -
# The JUnit file parses as XML (when python3 is there to say so).
if "$blitz" conformance --quick --filter Q1 Q3 --workers 1 --junit "$tmp/r.xml" --out "$tmp/c" \
     > /dev/null 2>&1; then
  if command -v python3 > /dev/null &&
     ! python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$tmp/r.xml"; then
    echo "FAIL: --junit wrote XML that does not parse"; status=1
  fi
else
  echo "FAIL: conformance --junit FILE failed"; status=1
fi
[ $status -eq 0 ] && echo "check_cli: every convention holds"
exit $status
