#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks (default) or applies (--fix) the house format (.clang-format, clang-format-19) on every
# C++ source of the project. usage: check_format.sh [--fix] [ROOT]
# Exit status: 0 when every file is formatted, 1 otherwise (clang-format names each difference).
set -euo pipefail

fix=0
root=$(cd "$(dirname "$0")/.." && pwd)
for a in "$@"; do
    case "$a" in
    --fix) fix=1 ;;
    *) root=$a ;;
    esac
done
cd "$root"
cf=$(command -v clang-format-19 || true)
if [ -z "$cf" ]; then
    echo "check_format: clang-format-19 is not installed (scripts/deps.sh installs it)" >&2
    exit 2
fi
mapfile -t files < <(find runtime cli bench stress conformance examples testing report scripts \
    \( -name '*.cpp' -o -name '*.hpp' \) -not -path 'bench/peers/rust/*' 2>/dev/null | sort)
if [ "$fix" = 1 ]; then
    "$cf" -i "${files[@]}"
    exit 0
fi
status=0
out=$("$cf" --dry-run -Werror "${files[@]}" 2>&1) || status=$?
if [ "$status" != 0 ]; then
    printf '%s\n' "$out" | grep -E '^[^ ].*: error:' | head -40
    echo "check_format: FAILED (run scripts/check_format.sh --fix, or make format)"
    exit 1
fi
echo "check_format: ${#files[@]} files formatted"
