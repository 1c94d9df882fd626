#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fails when a file the repository tracks is larger than the limit (default 5 MB): core dumps,
# build output and data dumps do not belong in the tree. In a checkout without git (a source
# archive) it checks every file outside build/ instead.
# usage: check_file_sizes.sh SOURCE_DIR [LIMIT_BYTES]
set -euo pipefail
dir=${1:?usage: check_file_sizes.sh SOURCE_DIR [LIMIT_BYTES]}
limit=${2:-5242880}
cd "$dir"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files -z; }
else
  list() { find . -path ./build -prune -o -path ./.git -prune -o -type f -print0; }
fi
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue  # deleted in the work tree, not yet committed
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "check_file_sizes: $f is $size bytes (limit $limit)" >&2
    bad=1
  fi
done < <(list)
[ "$bad" -eq 0 ] && echo "check_file_sizes: every file is within $limit bytes"
exit "$bad"
