# The two commands: `make demo` and `make test`. Both install what they need.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
BUILD_TYPE ?= RelWithDebInfo

# Sanitizer builds use Debian's clang (installed by scripts/install-deps) in
# build directories of their own; the benchmarks are left out of them.
SAN_CXX ?= clang++
SAN_SUPP := $(CURDIR)/tests/sanitizers
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0 \
	LSAN_OPTIONS=suppressions=$(SAN_SUPP)/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(SAN_SUPP)/ubsan.supp
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(SAN_SUPP)/tsan.supp

.PHONY: deps configure build test demo bench clean test-asan test-tsan

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

demo: build
	@$(BUILD_DIR)/bin/sandbox-demo

bench: build
	@$(BUILD_DIR)/bin/sandbox-load

# AddressSanitizer + UndefinedBehaviorSanitizer over every suite.
test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER=$(SAN_CXX) -DSANDBOX_SANITIZE=address,undefined \
	  -DSANDBOX_BUILD_BENCHMARKS=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && $(ASAN_ENV) ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer over every suite.
test-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER=$(SAN_CXX) -DSANDBOX_SANITIZE=thread \
	  -DSANDBOX_BUILD_BENCHMARKS=OFF >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && $(TSAN_ENV) ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
