#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 18: every relative link in the repository's Markdown resolves to a file or folder in the
# tree (web links and in-page anchors are not checked).
#   check_links.sh ROOT [FILE.md ...]     (default: every tracked *.md outside build/)
set -uo pipefail
root=$1
shift
cd "$root" || exit 2
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files '*.md'); fi
status=0 links=0
for f in "${files[@]}"; do
  dir=$(dirname "$f")
  # [text](target) with target not a URL, mail link or pure anchor; the #anchor part dropped.
  while IFS= read -r target; do
    links=$((links + 1))
    path=${target%%#*}
    [ -z "$path" ] && continue
    if [ ! -e "$dir/$path" ]; then
      echo "$f: broken link to '$target'"
      status=1
    fi
  done < <(grep -oE '\]\([^)[:space:]]+\)' "$f" | sed -E 's/^\]\((.*)\)$/\1/' |
           grep -vE '^(https?:|mailto:|#)')
done
[ $status -eq 0 ] && echo "check_links: $links relative links in ${#files[@]} files, all resolve"
exit $status
