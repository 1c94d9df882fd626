# SPDX-License-Identifier: MIT
# Thin wrapper over the CMake presets. `make run` and `make test` install missing system
# packages first (scripts/deps.sh), then configure, build and run.

JOBS ?= $(shell nproc)
CTEST = ctest --no-tests=error -j $(JOBS) $(CTEST_ARGS) --preset
PRESETS = release release-gcc debug tsan asan-ubsan gcc-asan

.PHONY: stress mutants results all deps peers run test test-release test-tsan test-gcc test-asan test-gcc-asan bench docs format format-check tidy \
        clean \
        $(addprefix build-,$(PRESETS))

all: build-release

deps:
	@bash scripts/deps.sh

# The benchmark peers (bench/peers/): toolchains from Debian (and gnuplot for the report's
# plots), then each peer built offline into build/peers/.
PEER_CXX = g++ -O2 -std=c++20 -Wall -Wextra -pthread
peers:
	@bash scripts/deps.sh peers
	@mkdir -p build/peers
	@GO111MODULE=off GOCACHE=$(CURDIR)/build/peers/gocache go build -o build/peers/go-peer bench/peers/go/main.go
	@echo "peers: build/peers/go-peer ($$(go version | cut -d' ' -f3))"
	@cd bench/peers/tokio && /usr/bin/cargo build -q --release --offline --target-dir $(CURDIR)/build/peers/tokio
	@echo "peers: build/peers/tokio/release/tokio-peer (tokio 1.24.2, Debian's cargo, offline)"
	@$(PEER_CXX) -o build/peers/asio-peer bench/peers/cpp/asio_peer.cpp bench/common/alloc_count.cpp
	@echo "peers: build/peers/asio-peer (standalone Asio from libasio-dev)"
	@$(PEER_CXX) -o build/peers/tbb-peer bench/peers/cpp/tbb_peer.cpp bench/common/alloc_count.cpp -ltbb
	@echo "peers: build/peers/tbb-peer (oneTBB from libtbb-dev)"
	@GO111MODULE=off GOCACHE=$(CURDIR)/build/peers/gocache go build -o build/peers/go-echo bench/peers/go-echo/main.go
	@GO111MODULE=off GOCACHE=$(CURDIR)/build/peers/gocache go build -o build/peers/go-fsproc bench/peers/go-fsproc/main.go
	@$(PEER_CXX) -o build/peers/asio-echo bench/peers/cpp/asio_echo.cpp
	@$(PEER_CXX) -DASIO_HAS_IO_URING -DASIO_DISABLE_EPOLL -o build/peers/asio-echo-uring bench/peers/cpp/asio_echo.cpp -luring
	@echo "peers: echo servers (go-echo, tokio/release/echo, asio-echo, asio-echo-uring) for scripts/bench_io.py"
	@echo "peers: go-fsproc and tokio/release/fsproc for scripts/bench_fsproc.py"

# build-<preset>: configure and build one CMake preset (build/<preset>/).
define build_preset
build-$(1): deps
	@cmake --preset $(1) >/dev/null
	@cmake --build --preset $(1) -j $(JOBS)
endef
$(foreach p,$(PRESETS),$(eval $(call build_preset,$(p))))

# The full conformance suite (every invariant, workers 1,2,4,8,16, each negative control), then
# a quick benchmark pass (3 interleaved repetitions, 4 workers) with every peer; prints both
# tables and writes results/<machine>/conformance.{md,json} and bench.{md,json} with plots.
run: build-release peers
	./build/release/blitz conformance --full
	./build/release/blitz bench --quick

# Mutation testing (issue 15): 53 source defects, each rebuilt and run through the conformance
# suite and the unit tests; writes results/<machine>/mutants.{md,json}. On demand only (about
# two minutes per mutant on 2 cores); not part of `make test`.
# Every committed result of this machine, regenerated at the current (clean) commit, with each
# step's wall time in results/<machine>/regenerated.md. About 2 hours; run it on a quiet machine.
results: deps
	@bash scripts/regenerate_results.sh

mutants: deps
	python3 scripts/mutate.py

demo: build-release
	./build/release/blitz demo

# The house format first (clang-format-19), then every test in the release build (clang-19, with
# the timer wheel's fuzz target and its control, which bring ASan + UBSan in themselves), again
# under ThreadSanitizer (clang-19), and again built by g++ 12 (Debian's default compiler, still
# supported: README, Compilers) with AddressSanitizer + UBSan + LeakSanitizer. Of the long
# conformance runs, the release build runs the unpinned one, the busy-mode pass and the wide
# ones (128 and 256 workers), the TSan build the unpinned and pinned ones; both run the idle
# protocol's and the timers' checkers with park_spin on; the g++ build runs the rest of the
# suite. `make run` runs the full suite pinned and unpinned.
# (`make test-gcc`: the g++ -O2 build without sanitizers; `make test-asan`: clang's ASan build.)
LONG_CONFORMANCE = '^conformance\.(quick|pinned|busy|hang_verdict|wide|wide_placed|park_spin)$$'
# Tests of the command line's conventions and output formats, which do not depend on the build:
# the release build runs them, the sanitizer builds skip them.
FORMAT_TESTS = cli\.(conventions|report|topo\..*)|ci\.script_control
# The echo server out of descriptors, signalled from outside (issue 44): the release build only.
# Under TSan a SIGTERM that reaches a process whose threads all sleep in raw futex syscalls
# waits for an intercepted call that never comes, and UBSan's vptr check needs a descriptor
# (a pipe) to read memory, so under RLIMIT_NOFILE exhaustion it reports every virtual call.
RELEASE_ONLY = example\.echo_emfile.*
test: format-check build-release build-tsan build-gcc-asan
	$(CTEST) release -E '^conformance\.pinned$$'
	$(CTEST) tsan -E '^(conformance\.(busy|wide|wide_placed)|$(FORMAT_TESTS)|$(RELEASE_ONLY))$$'
	$(CTEST) gcc-asan -E '^(conformance\.(quick|pinned|busy|hang_verdict|wide|wide_placed|park_spin)|$(FORMAT_TESTS)|$(RELEASE_ONLY))$$'

test-gcc: build-release-gcc
	$(CTEST) release-gcc -E $(LONG_CONFORMANCE)

test-release: build-release
	$(CTEST) release

test-tsan: build-tsan
	$(CTEST) tsan

test-asan: build-asan-ubsan
	$(CTEST) asan-ubsan -E $(LONG_CONFORMANCE)

test-gcc-asan: build-gcc-asan
	$(CTEST) gcc-asan -E $(LONG_CONFORMANCE)

# Ten minutes of `blitz stress` (randomized mixed workloads with exactly-once oracles) under
# ThreadSanitizer; STRESS_SECONDS=N for another length. `make test` runs 20 s in each build.
STRESS_SECONDS ?= 600
stress: build-tsan
	./build/tsan/blitz stress --seconds $(STRESS_SECONDS)

# The full benchmark report: every workload at 4 workers and at one per hardware thread, blitz
# and every peer interleaved, 5 repetitions (results/<machine>/bench.{md,json} and plots/).
# The Google Benchmark suites stay available as ./build/release/blitz_bench.
bench: build-release peers
	./build/release/blitz bench

# The API reference from the headers' comments (Doxygen, installed on first use) with the
# guides of docs/guide/ as its pages: build/docs/html/index.html.
docs:
	@bash scripts/deps.sh docs
	@mkdir -p build/docs
	@doxygen docs/Doxyfile
	@echo "docs: build/docs/html/index.html ($$(wc -l < build/docs/warnings.log) warnings in build/docs/warnings.log)"

format: deps
	@bash scripts/check_format.sh --fix

format-check: deps
	@bash scripts/check_format.sh

tidy: build-release
	@run-clang-tidy -p build/release -quiet 'runtime/src/.*\.cpp$$'

clean:
	rm -rf build
