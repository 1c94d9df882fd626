#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs tests/consumer the way a user's project would use blitz (issue 18):
#   consumer_test.sh install  BUILD_DIR SOURCE_DIR CXX   cmake --install BUILD_DIR into a scratch
#       prefix, then the consumer through find_package(blitz CONFIG) (static blitz::runtime),
#       and through pkg-config (the shared library)
#   consumer_test.sh subdir   BUILD_DIR SOURCE_DIR CXX   the consumer with add_subdirectory of
#       SOURCE_DIR; blitz's own tests, benchmarks, CLI and examples must stay off
#   consumer_test.sh fetch    BUILD_DIR SOURCE_DIR CXX   the consumer with FetchContent from
#       SOURCE_DIR's git repository at its current commit (a local clone: no network)
set -euo pipefail
mode=$1 build=$2 src=$3 cxx=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The installed package is consumed as a user would (Release). The add_subdirectory and
# FetchContent modes compile blitz's library inside the consumer: without optimisation there
# (CONSUMER_BUILD_TYPE), since they test how the projects fit together, not the code generated,
# and an optimised build of the library would double their time in `make test`.
build_type=Release
[ "$mode" = install ] || build_type=${CONSUMER_BUILD_TYPE:-}
configure() { cmake -S "$src/tests/consumer" -B "$tmp/b" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
                -DCMAKE_BUILD_TYPE="$build_type" "$@" >"$tmp/configure.log" 2>&1 ||
              { cat "$tmp/configure.log"; exit 1; }; }
case $mode in
  install)
    cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" ||
      { cat "$tmp/install.log"; exit 1; }
    for f in include/blitz/blitz.hpp lib/libblitz.a lib/libblitz.so lib/pkgconfig/blitz.pc \
             lib/cmake/blitz/blitzConfig.cmake lib/cmake/blitz/blitzConfigVersion.cmake; do
      [ -e "$tmp/prefix/$f" ] || { echo "install: $f missing"; exit 1; }
    done
    configure -DCMAKE_PREFIX_PATH="$tmp/prefix"
    cmake --build "$tmp/b" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
    "$tmp/b/consumer"
    # pkg-config, against the shared library
    flags=$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs blitz)
    # shellcheck disable=SC2086
    "$cxx" -O1 "$src/tests/consumer/main.cpp" $flags -o "$tmp/consumer_pc"
    LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer_pc"
    # (ldd to a file first: grep -q closing the pipe early would fail ldd under pipefail)
    ldd "$tmp/consumer_pc" > "$tmp/ldd.txt"
    grep -q "libblitz.so" "$tmp/ldd.txt" || { echo "pkg-config: not linked to libblitz.so"; exit 1; }
    echo "consumer: install, find_package and pkg-config ok" ;;
  subdir)
    configure -DBLITZ_SOURCE="$src"
    if cmake --build "$tmp/b" --target help | grep -qE "blitz_unit_tests|blitz_bench|example_|^blitz:"; then
      echo "add_subdirectory: blitz's own tests, benchmarks, CLI or examples were configured"; exit 1
    fi
    cmake --build "$tmp/b" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
    "$tmp/b/consumer"
    echo "consumer: add_subdirectory ok" ;;
  fetch)
    commit=$(git -C "$src" rev-parse HEAD)
    # (as a unity build, which also checks that the option works inside a consumer; the
    # add_subdirectory mode keeps the default, one object per source)
    configure -DBLITZ_FETCH_REPO="$src" -DBLITZ_FETCH_TAG="$commit" -DBLITZ_UNITY_LIBRARY=ON
    if cmake --build "$tmp/b" --target help | grep -qE "blitz_unit_tests|blitz_bench|example_|^blitz:"; then
      echo "FetchContent: blitz's own tests, benchmarks, CLI or examples were configured"; exit 1
    fi
    cmake --build "$tmp/b" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
    "$tmp/b/consumer"
    echo "consumer: FetchContent of ${commit:0:12} ok" ;;
  *) echo "usage: consumer_test.sh install|subdir|fetch BUILD_DIR SOURCE_DIR CXX"; exit 2 ;;
esac
