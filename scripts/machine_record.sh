#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prints the machine record (Markdown) that goes beside every number in results/.
set -u
cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
echo "| field | value |"
echo "|---|---|"
echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M') |"
# Dirty: tracked changes outside results/ (a run writes several reports there in turn).
dirty=$(git status --porcelain --untracked-files=no -- . ':(exclude)results' 2>/dev/null)
echo "| commit | $(git rev-parse --short HEAD 2>/dev/null)${dirty:+ (dirty)} |"
echo "| CPU | ${cpu} |"
echo "| logical CPUs | $(nproc) |"
echo "| NUMA nodes | $(lscpu | sed -n 's/^NUMA node(s):[[:space:]]*//p') |"
echo "| memory | $(free -g | awk '/^Mem:/ {print $2 " GiB"}') |"
echo "| hypervisor | $(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p') |"
echo "| kernel | $(uname -sr) |"
echo "| io_uring | kernel.io_uring_disabled = $(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo absent) (blitz's own backend choice and reason are in each I/O row) |"
echo "| OS | $(. /etc/os-release; echo "$PRETTY_NAME") |"
echo "| g++ | $(g++ --version | head -1) |"
echo "| clang++-19 | $(clang++-19 --version 2>/dev/null | head -1) |"
echo "| build | release preset (clang++-19): -O2 -g -DNDEBUG |"
