# Thin wrapper over the CMake presets. `make run` and `make test` install missing system
# packages first (scripts/deps.sh), then configure, build and run.

JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: all deps run test test-release test-tsan test-asan build-release build-tsan \
        build-debug build-asan-ubsan bench format tidy clean

all: build-release

deps:
	@bash scripts/deps.sh

build-%: deps
	@cmake --preset $* >/dev/null
	@cmake --build --preset $* -j $(JOBS)

run: build-release
	./build/release/blitz demo

# Every test in a normal build, then again under ThreadSanitizer (clang-19).
test: build-release build-tsan
	ctest --preset release -j $(JOBS) $(CTEST_ARGS)
	ctest --preset tsan -j $(JOBS) $(CTEST_ARGS)

test-release: build-release
	ctest --preset release -j $(JOBS) $(CTEST_ARGS)

test-tsan: build-tsan
	ctest --preset tsan -j $(JOBS) $(CTEST_ARGS)

test-asan: build-asan-ubsan
	ctest --preset asan-ubsan -j $(JOBS) $(CTEST_ARGS)

bench: build-release
	./build/release/blitz_bench

format:
	@find runtime cli bench stress conformance examples -name '*.cpp' -o -name '*.hpp' \
	  | xargs clang-format -i

tidy: build-release
	@run-clang-tidy -p build/release -quiet 'runtime/src/.*\.cpp$$'

clean:
	rm -rf build
