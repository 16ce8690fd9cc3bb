# faultline — the two commands a user needs are `make chaos` and `make test`.
# Everything installs itself: Debian packages (scripts/install-deps), the cluster components built
# from pinned Go modules (scripts/components), and the C++ build (CMake + Ninja).

SHELL := /bin/bash
.DEFAULT_GOAL := build

BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
TSAN_BUILD_DIR ?= build-tsan
FUZZ_BUILD_DIR ?= build-fuzz
# The AddressSanitizer/UBSan tree builds with clang (the release and TSan trees with GCC, so CI
# compiles the code with both): clang compiles it in less than half GCC's time (docs/development.md, "CI").
# An existing $(ASAN_BUILD_DIR) keeps the compiler it was configured with: remove it to switch.
ASAN_CXX       ?= clang++-14
BUILD_TYPE     ?= RelWithDebInfo
JOBS           ?= $(shell nproc)
CTEST_ARGS     ?=
# ccache keys on paths relative to the checkout, so every clone shares one cache.
export CCACHE_BASEDIR := $(CURDIR)
# With -g, ccache also hashes the working directory unless told not to: clones elsewhere would miss.
export CCACHE_NOHASHDIR := 1
export CCACHE_MAXSIZE ?= 5G
# One configure or build at a time per tree: .ci/run builds trees in the background while make test
# runs, and a second `cmake --build` of the same tree waits for the first (flock on a file in it).
locked = mkdir -p $(1) && flock $(1)/.faultline-build.lock

# make chaos overrides (empty means: what the scenario says)
SCENARIO  ?= yunikorn-3355-outage
# An airflow-* scenario runs on kube-scheduler (scripts/airflow), a daemonset-* one on
# kube-controller-manager; the others default to YuniKorn.
SCHEDULER ?= $(if $(filter airflow-%,$(SCENARIO)),kube-scheduler,$(if $(filter daemonset-%,$(SCENARIO)),kube-controller-manager,yunikorn))
# The system under test (docs/systems.md): a name in harness/systems or a system file; SCHEDULER= is
# the older spelling of the same.
SYSTEM ?= $(SCHEDULER)
# The Airflow of an airflow-* scenario: affected (2.6.1, default) or fixed (2.6.2)
AIRFLOW   ?=
# kube-controller-manager's feature gates (its system file's variant): gate-default, or
# stale-consistency-off (StaleControllerConsistencyDaemonSet=false), which daemonset-stale-duplicates
# runs with unless told otherwise.
KCM_GATES ?= $(or $(FAULTLINE_KCM_GATES),$(if $(filter daemonset-stale-duplicates,$(SCENARIO)),stale-consistency-off))
NODES     ?=
PODS      ?=
RATE      ?=
SEED      ?=
OUT       ?=
NO_EXPECT ?=
# The YuniKorn under test (make chaos|soak|stack-up|components; scripts/components): empty or v1.9.0
# for the pin, a yunikorn-k8shim checkout (YUNIKORN=~/src/yunikorn-k8shim), or patch:NAME (v1.9.0 plus
# scripts/go/yunikorn/patches/NAME); YUNIKORN_CORE=DIR builds it with a yunikorn-core checkout.
YUNIKORN      ?=
YUNIKORN_CORE ?=
export YUNIKORN YUNIKORN_CORE
# The Kubernetes release of the local stack (make chaos|soak|stack-up|components; scripts/components):
# empty for the default (v1.36.3), or one of scripts/go/kubernetes/*, e.g. K8S=v1.35.5.
K8S ?=
export K8S

# Where make chaos|stack-up|stack-down|stack-status run: local (scripts/stack: processes built from
# pinned Go modules) or kind (scripts/kind: a kind cluster from official images and charts, pins in
# kind/versions.env; no Go builds, needs Docker). See docs/kind.md.
CLUSTER ?= local
ifeq ($(CLUSTER),local)
STACK       := scripts/stack
CHAOS_NEEDS := bins components
STACK_NEEDS := bins components
STACK_UP    := scripts/stack up --system $(SYSTEM) --proxy-bin $(BUILD_DIR)/proxy/faultline-proxy
else ifeq ($(CLUSTER),kind)
STACK       := scripts/kind
CHAOS_NEEDS := harness-bin
STACK_NEEDS :=
STACK_UP    := scripts/kind up --scheduler $(SYSTEM)
else
$(error CLUSTER must be local or kind, not '$(CLUSTER)')
endif

# Fuzzing (make fuzz / make fuzz-ci): Debian's clang 14 and its libFuzzer.
FUZZ_CXX       ?= clang++-14
LLVM_BIN       ?= /usr/lib/llvm-14/bin
FUZZ_SECONDS   ?= 600
FUZZ_FLAGS     ?=
FUZZ_TARGETS   := request_classify scenario_load admin_request watch_framer audit_roundtrip prom_text
# Largest input libFuzzer generates per target (bytes).
FUZZ_MAX_LEN_request_classify := 8192
FUZZ_MAX_LEN_scenario_load    := 65536
FUZZ_MAX_LEN_admin_request    := 65536
FUZZ_MAX_LEN_watch_framer     := 65536
FUZZ_MAX_LEN_audit_roundtrip  := 8192
FUZZ_MAX_LEN_prom_text        := 16384
FUZZ_LIMITS    := -rss_limit_mb=2048 -timeout=10
FUZZ_ENV       := ASAN_SYMBOLIZER_PATH=$(LLVM_BIN)/llvm-symbolizer \
                  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# What the ThreadSanitizer build builds and runs: the engine's and scenario loaders', the relay's
# and the admin API's unit tests and the relay integration tests (with the faultline-proxy they spawn).
TSAN_TARGETS   := faults_unit_tests harness_schema_unit_tests proxy_net_unit proxy_relay_unit proxy_admin_test \
                  proxy_app_test relay_integration_test faultline-proxy

.PHONY: deps build bins harness-bin check sanitize sanitize-build e2e e2e-build tsan tsan-build fuzz fuzz-ci fuzz-build fuzz-replay components test test-chaos chaos \
        repro-3355 soak explore bench stack-up stack-down stack-status format lint clean $(addprefix fuzz-run-,$(FUZZ_TARGETS))

deps:
	@scripts/install-deps --check >/dev/null || scripts/install-deps

$(BUILD_DIR)/build.ninja: | deps
	$(call locked,$(BUILD_DIR)) cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: deps $(BUILD_DIR)/build.ninja
	$(call locked,$(BUILD_DIR)) cmake --build $(BUILD_DIR) -j $(JOBS)

# The two programs a chaos run, a soak or a stack needs, without the test executables that
# `build` compiles too (make chaos on a fresh clone: about half the translation units).
bins: deps $(BUILD_DIR)/build.ninja
	$(call locked,$(BUILD_DIR)) cmake --build $(BUILD_DIR) -j $(JOBS) --target faultline-proxy faultline-harness

# Only faultline-harness (make chaos CLUSTER=kind: the proxy is built into its image there).
harness-bin: deps $(BUILD_DIR)/build.ninja
	$(call locked,$(BUILD_DIR)) cmake --build $(BUILD_DIR) -j $(JOBS) --target faultline-harness

components: deps
	scripts/components build

# Fast part: unit + integration tests (integration talks to a real kube-apiserver, so it needs the
# components too).
check: build components
	cd $(BUILD_DIR) && ctest -L 'unit|integration' --output-on-failure -j $(JOBS) $(CTEST_ARGS)

$(ASAN_BUILD_DIR)/build.ninja: | deps
	$(call locked,$(ASAN_BUILD_DIR)) cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=$(ASAN_CXX) \
	  -DFAULTLINE_SANITIZE=ON -DFAULTLINE_BUILD_E2E=OFF

# Address + undefined sanitizer build of the unit and integration tests (not the `components`
# ones: they build and test Go code, which no C++ sanitizer sees). The C++ build comes before the
# components prerequisite, so a components build already running (.ci/run starts one in the
# background) overlaps it; the tests need the components.
sanitize-build: deps $(ASAN_BUILD_DIR)/build.ninja
	$(call locked,$(ASAN_BUILD_DIR)) cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)

sanitize: sanitize-build components
	cd $(ASAN_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_SYMBOLIZER_PATH=$(LLVM_BIN)/llvm-symbolizer \
	  ctest -L 'unit|integration' -LE components --output-on-failure -j $(JOBS) $(CTEST_ARGS)

$(TSAN_BUILD_DIR)/build.ninja: | deps
	$(call locked,$(TSAN_BUILD_DIR)) cmake -S . -B $(TSAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAULTLINE_SANITIZE=thread -DFAULTLINE_BUILD_E2E=OFF

# ThreadSanitizer build of the proxy's and the engine's tests (not the harness, not e2e). Every
# process reports into $(TSAN_BUILD_DIR)/tsan-reports, the spawned proxies included: a report
# there fails the run even when the process that raced was a child whose exit code no test read.
tsan-build: deps $(TSAN_BUILD_DIR)/build.ninja
	$(call locked,$(TSAN_BUILD_DIR)) cmake --build $(TSAN_BUILD_DIR) -j $(JOBS) --target $(TSAN_TARGETS)

tsan: tsan-build
	rm -rf $(TSAN_BUILD_DIR)/tsan-reports && mkdir -p $(TSAN_BUILD_DIR)/tsan-reports
	cd $(TSAN_BUILD_DIR) && status=0 && \
	  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan-suppressions.txt log_path=$(abspath $(TSAN_BUILD_DIR))/tsan-reports/tsan" \
	  ctest -R '^(unit|integration\.relay|integration\.relay_h2|integration\.relay_limits)\.' --output-on-failure -j $(JOBS) $(CTEST_ARGS) || status=$$?; \
	  for f in tsan-reports/*; do [[ -e $$f ]] || continue; echo "== $$f"; cat "$$f"; status=1; done; \
	  exit $$status

$(FUZZ_BUILD_DIR)/build.ninja: | deps
	$(call locked,$(FUZZ_BUILD_DIR)) cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) -DFAULTLINE_FUZZ=ON

fuzz-build: deps $(FUZZ_BUILD_DIR)/build.ninja
	$(call locked,$(FUZZ_BUILD_DIR)) cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS) --target fuzz-targets

# One target for FUZZ_SECONDS. New inputs go to $(FUZZ_BUILD_DIR)/corpus/<target> (the committed
# seeds under tests/fuzz/corpus stay as they are), crashes to $(FUZZ_BUILD_DIR)/artifacts/<target>.
# A crash fixed is kept: copy its input to tests/fuzz/crashes/<target>/ (replayed by fuzz-replay).
$(addprefix fuzz-run-,$(FUZZ_TARGETS)): fuzz-run-%: fuzz-build
	@mkdir -p $(FUZZ_BUILD_DIR)/corpus/$* $(FUZZ_BUILD_DIR)/artifacts/$*
	set -o pipefail; $(FUZZ_ENV) $(FUZZ_BUILD_DIR)/tests/fuzz/fuzz_$* \
	  $(FUZZ_BUILD_DIR)/corpus/$* tests/fuzz/corpus/$* \
	  -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN_$*) $(FUZZ_LIMITS) \
	  -artifact_prefix=$(FUZZ_BUILD_DIR)/artifacts/$*/ -print_final_stats=1 $(FUZZ_FLAGS) \
	  2>&1 | tee $(FUZZ_BUILD_DIR)/fuzz-$*.log | { grep -v -E '^#[0-9]+\s+(NEW|REDUCE)' || true; }

# Every kept crash input runs once through its target: none may crash again.
fuzz-replay: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  inputs=(tests/fuzz/crashes/$$t/*); [[ -e $${inputs[0]} ]] || continue; \
	  echo "fuzz-replay: $$t: $${#inputs[@]} kept crash inputs"; \
	  $(FUZZ_ENV) $(FUZZ_BUILD_DIR)/tests/fuzz/fuzz_$$t $(FUZZ_LIMITS) "$${inputs[@]}" >$(FUZZ_BUILD_DIR)/replay-$$t.log 2>&1 \
	    || { cat $(FUZZ_BUILD_DIR)/replay-$$t.log; exit 1; }; \
	done

# Each fuzz target for FUZZ_SECONDS (default 10 minutes each; `make -j2 fuzz` runs two at a time),
# after replaying the kept crash inputs.
fuzz: fuzz-replay
	$(MAKE) $(addprefix fuzz-run-,$(FUZZ_TARGETS))

# The CI regression pass: the kept crash inputs, then 60 s of each target, $(JOBS) targets at a
# time (each fuzzer is one process on one core).
fuzz-ci:
	$(MAKE) -j $(JOBS) fuzz FUZZ_SECONDS=60

# The release tree's share of make test: only what the e2e suites run (the e2e-tests target:
# faultline-proxy, faultline-harness, the e2e test executables; tests/CMakeLists.txt), then the
# e2e suites, the `components` tests (scripts/components and its Go builds; no C++ tree changes
# them) and the `release` ones (the relay's memory tests against the release binary and its
# allocator, jemalloc). Each e2e test runs alone (RUN_SERIAL).
e2e-build: deps $(BUILD_DIR)/build.ninja
	$(call locked,$(BUILD_DIR)) cmake --build $(BUILD_DIR) -j $(JOBS) --target e2e-tests

e2e: e2e-build components
	cd $(BUILD_DIR) && ctest -L 'e2e|components|release' --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# Everything: unit, integration and end-to-end tests (the chaos suite included). Unit and
# integration tests build and run once, in the address + undefined sanitizer tree (sanitize:
# $(JOBS) at a time), not a second time in the release tree (but for the relay's memory tests,
# label `release`); then the release tree's e2e suites, components and release tests (e2e).
# Together they are every test ctest lists (`ctest -N`).
test: sanitize e2e

# Only the chaos suite: the YUNIKORN-3355 reproduction and its controls through scripts/chaos.
test-chaos: build components
	cd $(BUILD_DIR) && ctest -R '^e2e\.Chaos' --output-on-failure $(CTEST_ARGS)

# The C++ sources of the project.
CXX_SOURCES = $$(git ls-files '*.cpp' '*.hpp' '*.h')
CLANG_FORMAT ?= clang-format-14

# Applies .clang-format to every C++ source.
format: deps
	$(CLANG_FORMAT) -i $(CXX_SOURCES)

# Every shell script of the project (files under scripts/, tests/integration/{kind,components} and
# tests/unit/scripts that start with a bash shebang), every C++ source in the style of
# .clang-format (`make format` fixes what this reports), the GitHub Actions workflows
# (scripts/actionlint), the user documentation against the code (scripts/check-docs: links and
# anchors, make targets, the flags of the programs and scripts, the scenario keys the loader
# accepts; it runs the release tree's two programs), and that each library reaches only the
# headers of what it links (scripts/check-layers).
lint: deps bins
	shellcheck -x .ci/run scripts/lib/*.sh $$(grep -lr --exclude-dir=go '^#!/usr/bin/env bash' scripts tests/integration/kind tests/integration/components tests/unit/scripts)
	$(CLANG_FORMAT) --dry-run --Werror $(CXX_SOURCES)
	scripts/actionlint
	scripts/check-docs --proxy $(BUILD_DIR)/proxy/faultline-proxy --harness $(BUILD_DIR)/harness/faultline-harness
	scripts/check-layers --build-dir $(BUILD_DIR)

stack-up: $(STACK_NEEDS)
	$(STACK_UP)

stack-down:
	$(STACK) down

stack-status:
	$(STACK) status

chaos: $(CHAOS_NEEDS)
	$(if $(KCM_GATES),FAULTLINE_KCM_GATES=$(KCM_GATES)) scripts/chaos --cluster $(CLUSTER) --scenario $(SCENARIO) --system $(SYSTEM) \
	  $(if $(NODES),--nodes $(NODES)) $(if $(PODS),--pods $(PODS)) $(if $(RATE),--rate $(RATE)) $(if $(SEED),--seed $(SEED)) \
	  $(if $(DURATION),--churn-for $(DURATION)) $(if $(SETTLE),--settle $(SETTLE)) $(if $(OUT),--out $(OUT)) $(if $(NO_EXPECT),--no-expect) $(if $(AIRFLOW),--airflow $(AIRFLOW))

RUNS ?= 10
# make soak MATRIX=file.yaml: a matrix sweep on reused stacks (docs/sweeps-and-soaks.md); OUT=DIR resumes one.
soak: bins components
ifneq ($(MATRIX),)
	scripts/soak --matrix $(MATRIX) $(if $(OUT),--out $(OUT))
else
	$(if $(AIRFLOW),FAULTLINE_AIRFLOW_VARIANT=$(AIRFLOW)) $(if $(KCM_GATES),FAULTLINE_KCM_GATES=$(KCM_GATES)) scripts/soak --runs $(RUNS) --scenario $(SCENARIO) --scheduler $(SYSTEM) \
	  $(if $(NODES),--nodes $(NODES)) $(if $(PODS),--pods $(PODS)) $(if $(RATE),--rate $(RATE)) $(if $(SEED),--seed $(SEED)) \
	  $(if $(DURATION),--churn-for $(DURATION)) $(if $(SETTLE),--settle $(SETTLE)) $(if $(OUT),--out $(OUT)) $(if $(NO_EXPECT),--no-expect)
endif

# make explore SCENARIO=... [SYSTEM=...] [BUDGET=2h] [SHARD=1/2] [OUT=DIR] [SET="PATH=VALUE ..."]:
# fault plans derived from a reference run, run, re-run, minimized and reported (docs/explore.md);
# the same command resumes.
BUDGET ?= 2h
SHARD  ?= 1/1
REPEATS ?= 3
explore: bins components
	scripts/explore --scenario $(SCENARIO) --system $(SYSTEM) --budget $(BUDGET) --shard $(SHARD) \
	  --repeats $(REPEATS) $(if $(OUT),--out $(OUT)) $(if $(MAX_PLANS),--max-plans $(MAX_PLANS)) \
	  $(foreach s,$(SET),--set '$(s)')

# faultline-proxy side by side with HAProxy, nginx and no proxy, HTTP/1.1 (wrk) and HTTP/2
# (h2load), a pod GET and a pod list: rps, p99 and ratios to HAProxy (tests/bench/proxy/bench-peers).
BENCH_SECONDS ?= 8
BENCH_ROUNDS  ?= 3
BENCH_FLAGS   ?=
bench: deps $(BUILD_DIR)/build.ninja
	$(call locked,$(BUILD_DIR)) cmake --build $(BUILD_DIR) -j $(JOBS) --target faultline-proxy
	tests/bench/proxy/bench-peers --proxy $(BUILD_DIR)/proxy/faultline-proxy --seconds $(BENCH_SECONDS) --rounds $(BENCH_ROUNDS) $(BENCH_FLAGS)

repro-3355:
	$(MAKE) chaos SCENARIO=yunikorn-3355-outage SCHEDULER=yunikorn

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(TSAN_BUILD_DIR) $(FUZZ_BUILD_DIR)
