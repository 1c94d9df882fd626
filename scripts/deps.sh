#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages blitz needs, only when something is missing.
# Quiet and fast (one dpkg-query) when everything is present; safe without a terminal.
# `deps.sh peers` installs the benchmark peers' toolchains instead (make peers / make bench):
# Go, Asio, oneTBB and Rust with Debian's packaged Tokio crate, and the outside load tools of
# the I/O rows (wrk, iperf3). `deps.sh docs` installs Doxygen (make docs).
set -euo pipefail

if [ "${1:-}" = "docs" ]; then
  packages=(doxygen)  # make docs: the API reference
elif [ "${1:-}" = "peers" ]; then
  packages=(golang-go libasio-dev libtbb-dev cargo rustc librust-tokio-dev librust-tokio-macros-dev gnuplot-nox
            wrk iperf3)
else
  packages=(
    build-essential cmake ninja-build pkg-config git
    libhwloc-dev libnuma-dev liburing-dev
    libgtest-dev libgmock-dev libbenchmark-dev
    clang-19 libclang-rt-19-dev llvm-19 clang-format-19
  )
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps.sh: done"
