# The two commands: `make demo` and `make test`. Both install what they need.
BUILD_DIR ?= build
# The sub-makes of `cmake --build` do not announce their directories.
MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc)
BUILD_TYPE ?= RelWithDebInfo

# Sanitizer builds use Debian's clang (installed by scripts/install-deps) in
# build directories of their own; the benchmarks are left out of them.
SAN_CXX ?= clang++
# The suppression files (and TSan's reports) must be where the sanitized
# programs that contained sessions run can reach them; such a session has
# a /tmp of its own, so for a checkout below /tmp they go to a directory of
# this checkout's below /var/tmp for the run, removed after it.
BELOW_TMP := $(filter /tmp/%,$(CURDIR))
ifneq ($(BELOW_TMP),)
SAN_SUPP := /var/tmp/sandbox-sanitizers-$(shell id -u)$(subst /,-,$(CURDIR))
SAN_SETUP = rm -rf $(SAN_SUPP) && mkdir -p -m 755 $(SAN_SUPP) && \
	cp $(CURDIR)/tests/sanitizers/*.supp $(SAN_SUPP)/ &&
SAN_CLEANUP = rm -rf $(SAN_SUPP);
else
SAN_SUPP := $(CURDIR)/tests/sanitizers
SAN_SETUP =
SAN_CLEANUP =
endif
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0 \
	LSAN_OPTIONS=suppressions=$(SAN_SUPP)/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(SAN_SUPP)/ubsan.supp
# TSan writes its reports to files, not to the stderr that the CLI suites
# check; the target prints them and fails. symbolize=0: no llvm-symbolizer
# child inside the processes under test (the CLI reaps and signals its
# children), and CAF's typed-actor names overflow its buffer anyway; the
# suppressions match module names. To read a report's frames, run the suite
# again by hand with TSAN_OPTIONS=symbolize=1.
ifneq ($(BELOW_TMP),)
TSAN_LOGS := $(SAN_SUPP)/tsan-logs
else
TSAN_LOGS := $(CURDIR)/build-tsan/tsan-logs
endif
# die_after_fork=0: some suites fork a child that runs a node of its own
# (actors.logging, actors.embedding); TSan counts its own background thread,
# so every fork is "multi-threaded" to it and the child would die at its
# first thread. The child is a fresh node, checked like any other process.
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1:symbolize=0:handle_abort=1:die_after_fork=0:suppressions=$(SAN_SUPP)/tsan.supp:log_path=$(TSAN_LOGS)/tsan

.PHONY: deps configure build build-tests test test-stress demo bench clean \
	test-asan test-tsan package test-package

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

# The libraries, the CLI, the demo and the man page (the default target).
build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Every program the suites run (target sandbox_tests).
build-tests: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target sandbox_tests

# Every suite but the package and stress entries.
test: build-tests
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE 'package|stress'

# The stress and soak entries (label stress): the full sizes of the
# properties `make test` checks smaller, and the contained runs of the
# suites isolation cannot change (tests/CMakeLists.txt). Not in CI.
test-stress: build-tests
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L stress

# The Debian package (CPack, cmake/install.cmake), into $(BUILD_DIR)/package.
package: build
	@cd $(BUILD_DIR) && cpack -G DEB

# The package.* suites (tests/package): the CMake package used three ways,
# sandbox.pc, and the .deb. One at a time: each builds with every core.
test-package: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -L package -LE stress

# The demo needs the libraries only (not the CLI).
demo: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target sandbox-demo
	@$(BUILD_DIR)/bin/sandbox-demo

bench: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target sandbox_benchmarks
	@$(BUILD_DIR)/bin/sandbox-load

# AddressSanitizer + UndefinedBehaviorSanitizer over every suite.
test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER=$(SAN_CXX) -DSANDBOX_SANITIZE=address,undefined \
	  -DSANDBOX_BUILD_BENCHMARKS=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS) --target sandbox_tests
	@$(SAN_SETUP) cd build-asan && $(ASAN_ENV) ctest --output-on-failure \
	  -j $(JOBS) -LE stress; status=$$?; $(SAN_CLEANUP) exit $$status

# ThreadSanitizer over every suite.
test-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER=$(SAN_CXX) -DSANDBOX_SANITIZE=thread \
	  -DSANDBOX_BUILD_BENCHMARKS=OFF >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target sandbox_tests
	@$(SAN_SETUP) rm -rf $(TSAN_LOGS) && mkdir -p -m 1777 $(TSAN_LOGS) && \
	  cd build-tsan && $(TSAN_ENV) ctest --output-on-failure -j $(JOBS) -LE stress; \
	  status=$$?; \
	  reports=$$(grep -l 'WARNING: ThreadSanitizer' $(TSAN_LOGS)/* 2>/dev/null); \
	  if [ -n "$$reports" ]; then cat $$reports; \
	    echo "ThreadSanitizer reports: $$reports"; status=1; fi; \
	  $(SAN_CLEANUP) exit $$status

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
