# Convenience wrapper around CMake. `make demo` and `make check` work on a
# fresh Debian machine: they install the few build dependencies if missing.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps test-deps check-deps build demo package test test-once check test-asan test-tsan test-nootlp fuzz bench screenshot clean

all: build

deps:
	@tools/ensure-deps.sh

test-deps:
	@tools/ensure-deps.sh test

# What the full tier adds (Prometheus, node_exporter, Chromium, clang's libFuzzer).
check-deps:
	@tools/ensure-deps.sh check

build: deps
	cmake -S . -B $(BUILD) -DINSPECTOR_WERROR=ON -DBUILD_TESTING=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# The demo (tools/demo.sh) builds what it needs itself (the plugin and the two tools), quietly,
# in the tree `make test` uses, configured as `make build` does: neither rebuilds the other's part.
demo: deps
	@JOBS=$(JOBS) tools/demo.sh $(BUILD)

# The packages: a Release build of their own in build-pkg, then cpack's nccl-inspector .deb
# and .tar.gz there (tests/test_package.py installs the .deb into a scratch tree and runs it).
package: deps
	cmake -S . -B build-pkg -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
	cmake --build build-pkg -j $(JOBS)
	cd build-pkg && cpack

# The plain build's test suite.
test: build test-deps
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The cases labelled `once` (tests/CMakeLists.txt says which and why: packages, scale, outside
# daemons, the Python checks), which `make check` runs in the plain build only.
test-once: build test-deps
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L once

# The suite under AddressSanitizer+UBSan, less the `once` cases (ASAN_CTEST_ARGS= runs them too).
ASAN_CTEST_ARGS ?= -LE once
test-asan: deps
	cmake -S . -B $(BUILD)-asan -DINSPECTOR_WERROR=ON -DBUILD_TESTING=ON -DINSPECTOR_SANITIZE=address >/dev/null
	cmake --build $(BUILD)-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) $(ASAN_CTEST_ARGS)

# The concurrency tests under ThreadSanitizer (only what they need is built).
test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -DINSPECTOR_WERROR=ON -DBUILD_TESTING=ON -DINSPECTOR_SANITIZE=thread >/dev/null
	cmake --build $(BUILD)-tsan -j $(JOBS) --target inspector-threads-tier
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir $(BUILD)-tsan --output-on-failure -j $(JOBS) -L threads

# The plugin built without OTLP (-DINSPECTOR_OTLP=OFF: no network code): it builds, writes
# its JSON log and Prometheus files, and says once that an OTLP setting is not in this build.
# Only what those tests run is built (not every test program a second time).
test-nootlp: deps
	cmake -S . -B $(BUILD)-nootlp -DINSPECTOR_WERROR=ON -DBUILD_TESTING=ON -DINSPECTOR_OTLP=OFF >/dev/null
	cmake --build $(BUILD)-nootlp -j $(JOBS) --target rccl-profiler-inspector inspector-replay \
	  inspector-report inspector-unit-no_otlp
	ctest --test-dir $(BUILD)-nootlp --output-on-failure -j $(JOBS) -R 'no_otlp|bad_env|^json|^prom:|fixtures:default\.2\.28\.9\.'

# The parsers of outside input (replay traces, report logs, the plugin's environment) under
# libFuzzer with ASan+UBSan, FUZZ_SECONDS each (tests/fuzz/run.sh; needs clang).
# FUZZ_JOBS targets at a time (JOBS; `make check`: all three at once, so that its fuzzing takes
# FUZZ_SECONDS of wall time, not twice that on 2 cores).
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= $(JOBS)
fuzz: check-deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh $(BUILD)-fuzz

# The README's picture of the report's page (docs/report-screenshot.png, 1400 px wide), made
# again from today's page: after any change to the page's code (report_views:views.screenshot-fresh
# fails until it is). Needs chromium (check-deps installs it).
screenshot: build check-deps
	python3 tests/test_report_views.py --make-screenshot $(CURDIR)/docs/report-screenshot.png \
	  --size 1400,4400 --replay $(abspath $(BUILD))/bin/inspector-replay \
	  --plugin $(abspath $(BUILD))/lib/libnccl-profiler-inspector.so

# The CPU benchmark (docs/BENCHMARKS.md): a Release build of its own, then bench/run.sh.
bench:
	@tools/ensure-deps.sh bench
	cmake -S . -B $(BUILD)-bench -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" -DINSPECTOR_WERROR=ON >/dev/null
	cmake --build $(BUILD)-bench -j $(JOBS)
	bench/run.sh $(BUILD)-bench

# Everything CI runs (.ci/run): every case once, in the build that suits it (the `once` cases in
# the plain build, the rest under ASan+UBSan), the concurrency cases again under TSan, the build
# without OTLP, and 30 s of fuzzing per parser, the three at once (`make fuzz` alone: 60 s,
# JOBS at a time). About 14 minutes on 2 cores (README). `make test` is the
# quick tier: every case in the plain build, what to run while working.
check: FUZZ_SECONDS = 30
check: FUZZ_JOBS = 3
check: check-deps test-once test-asan test-tsan test-nootlp fuzz

# Every build folder the targets above make (build-pkg: `make package`), and the demo's output.
clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-nootlp $(BUILD)-bench $(BUILD)-fuzz build-pkg demo-output
