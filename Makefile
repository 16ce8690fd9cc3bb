# faultline — the two commands a user needs are `make chaos` and `make test`.
# Everything installs itself: Debian packages (scripts/install-deps), the cluster components built
# from pinned Go modules (scripts/components), and the C++ build (CMake + Ninja).

SHELL := /bin/bash
.DEFAULT_GOAL := build

BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
BUILD_TYPE     ?= RelWithDebInfo
JOBS           ?= $(shell nproc)
CTEST_ARGS     ?=
# ccache keys on paths relative to the checkout, so every clone shares one cache.
export CCACHE_BASEDIR := $(CURDIR)
# With -g, ccache also hashes the working directory unless told not to: clones elsewhere would miss.
export CCACHE_NOHASHDIR := 1
export CCACHE_MAXSIZE ?= 5G

# make chaos overrides (empty means: what the scenario says)
SCENARIO  ?= yunikorn-3355-outage
SCHEDULER ?= yunikorn
NODES     ?=
PODS      ?=
RATE      ?=
SEED      ?=
OUT       ?=

.PHONY: deps build check sanitize components test test-chaos chaos repro-3355 soak stack-up stack-down stack-status lint clean

deps:
	@scripts/install-deps --check >/dev/null || scripts/install-deps

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

components: deps
	scripts/components build

# Fast part: unit + integration tests (integration talks to a real kube-apiserver, so it needs the
# components too).
check: build components
	cd $(BUILD_DIR) && ctest -L 'unit|integration' --output-on-failure -j $(JOBS) $(CTEST_ARGS)

$(ASAN_BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFAULTLINE_SANITIZE=ON -DFAULTLINE_BUILD_E2E=OFF

# Address + undefined sanitizer build of the unit and integration tests.
sanitize: deps components $(ASAN_BUILD_DIR)/build.ninja
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)
	cd $(ASAN_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest -L 'unit|integration' --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# Everything: unit, integration and end-to-end tests (the chaos suite included).
test: build components
	cd $(BUILD_DIR) && ctest --output-on-failure $(CTEST_ARGS)

# Only the chaos suite: the YUNIKORN-3355 reproduction and its controls through scripts/chaos.
test-chaos: build components
	cd $(BUILD_DIR) && ctest -R '^e2e\.Chaos' --output-on-failure $(CTEST_ARGS)

# Every shell script of the project (files under scripts/ that start with a bash shebang).
lint: deps
	shellcheck .ci/run $$(grep -lr --exclude-dir=go '^#!/usr/bin/env bash' scripts)

stack-up: build components
	scripts/stack up --scheduler $(SCHEDULER) --proxy-bin $(BUILD_DIR)/proxy/faultline-proxy

stack-down:
	scripts/stack down

stack-status:
	scripts/stack status

chaos: build components
	scripts/chaos --scenario $(SCENARIO) --scheduler $(SCHEDULER) \
	  $(if $(NODES),--nodes $(NODES)) $(if $(PODS),--pods $(PODS)) $(if $(RATE),--rate $(RATE)) $(if $(SEED),--seed $(SEED)) \
	  $(if $(OUT),--out $(OUT))

RUNS ?= 10
soak: build components
	scripts/soak --runs $(RUNS) --scenario $(SCENARIO) --scheduler $(SCHEDULER) \
	  $(if $(NODES),--nodes $(NODES)) $(if $(PODS),--pods $(PODS)) $(if $(RATE),--rate $(RATE)) $(if $(SEED),--seed $(SEED)) \
	  $(if $(OUT),--out $(OUT))

repro-3355:
	$(MAKE) chaos SCENARIO=yunikorn-3355-outage SCHEDULER=yunikorn

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR)
