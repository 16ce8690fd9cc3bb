#!/usr/bin/env bash
# ctest integration.kind.script: scripts/kind (and scripts/chaos --cluster kind) end to end with
# stand-ins for kind, docker, helm, kubectl and curl on PATH (tests/integration/kind/stub) that
# record every call. Checks the calls against the expected sequences in
# tests/integration/kind/expected-*.calls, the env file against scripts/stack's keys, the sha256
# checks (a mismatch and a missing pin stop `up` before the cluster exists), the clean-up of a
# failed `up`, and that `down` stops the port-forwards. kubectl's local commands (kustomize,
# create --dry-run=client) run the real kubectl: the sidecar patch is really applied.
# Usage: script_test.sh REPO   (UPDATE_EXPECTED=1: rewrite the expected-*.calls files; review
#        their diff before committing it). The real kubectl is the components' (make components).
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
real_kubectl=${FAULTLINE_COMPONENTS_BIN:-$("$repo/scripts/components" path)}/kubectl
[[ -x $real_kubectl ]] || { echo "FAIL: no kubectl at $real_kubectl (make components)"; exit 1; }
here=$repo/tests/integration/kind
work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-kind-script.XXXXXX")
cleanup() {
  local f pid
  for f in "$work"/run*/pids/port-forward-*; do
    [[ -e $f ]] || continue
    read -r pid _ <"$f"
    kill "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
quiet() { "$@" >/dev/null; }
check() { # description command...
  if "${@:2}"; then echo "ok:   $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

mkdir -p "$work/bin" "$work/state"
for t in kind docker helm kubectl curl faultline-harness; do ln -s "$here/stub" "$work/bin/$t"; done
sha() { printf '%s' "$1" | sha256sum | awk '{print $1}'; }
# The pins, with the sha256 of what the stubs serve.
write_pins() {
  sed -e "s/^KWOK_MANIFEST_SHA256=.*/KWOK_MANIFEST_SHA256=$(sha $'kwok.yaml of the stub\n')/" \
    -e "s/^KWOK_STAGES_SHA256=.*/KWOK_STAGES_SHA256=$(sha $'stage-fast.yaml of the stub\n')/" \
    -e "s/^YUNIKORN_CHART_SHA256=.*/YUNIKORN_CHART_SHA256=$(sha $'chart archive of the stub\n')/" \
    "$repo/kind/versions.env" >"$work/versions.env"
}
write_pins

export PATH=$work/bin:$PATH STUB_STATE=$work/state STUB_REAL_KUBECTL=$real_kubectl \
  STUB_CHART=$repo/tests/data/kind/yunikorn-chart.yaml FAULTLINE_KIND_PINS=$work/versions.env \
  FAULTLINE_KIND_CLUSTER=fl-test
unset YUNIKORN

# The calls, with the temporary directory, the checkout and free ports written as placeholders.
normalized() {
  sed -e "s|$work|<work>|g" -e "s|$repo|<repo>|g" -e "s|${TMPDIR:-/tmp}/tmp\.[A-Za-z0-9]*|<tmp>|g" \
    -e 's|FAULTLINE_GIT_COMMIT=[0-9a-f]*\(-dirty\)\{0,1\}|FAULTLINE_GIT_COMMIT=<commit>|g' \
    -e 's|127\.0\.0\.1:[0-9]\{4,5\}|127.0.0.1:<port>|g' -e 's# [0-9]\{4,5\}:\(9080\|8443\|8444\)$# <port>:\1#' "$1"
}
same_calls() { # log expected-file ($UPDATE_EXPECTED=1 rewrites the file instead)
  [[ ${UPDATE_EXPECTED:-} == 1 ]] && normalized "$1" >"$here/$2"
  if ! diff -u "$here/$2" <(normalized "$1"); then
    echo "(the calls above differ from $2; if the change is intended: update $here/$2)"
    return 1
  fi
}

# ---- up, status, down ---------------------------------------------------------------------
export STUB_LOG=$work/up.log STUB_NODES=2
timeout 120 "$repo/scripts/kind" up --run-dir "$work/run" --nodes 2 >"$work/out" 2>&1 || { cat "$work/out"; echo "FAIL: up"; exit 1; }
check "up: the expected calls in order" same_calls "$work/up.log" expected-up.calls
env_keys() { sed -n 's/^\(FAULTLINE_[A-Z_]*\)=.*/\1/p' "$1" | sort; }
stack_keys() { sed -n '/^write_env()/,/^}/s/^\(FAULTLINE_[A-Z_]*\)=.*/\1/p' "$repo/scripts/stack" | sort; }
check "up: the env file has every key scripts/stack writes" \
  bash -c "comm -23 <(printf '%s\n' \"\$1\") <(printf '%s\n' \"\$2\") | grep -q . && exit 1 || exit 0" _ \
  "$(stack_keys)" "$(env_keys "$work/run/env")"
check "up: env points the harness at the port-forwards and the kind kubeconfig" grep -qx \
  "FAULTLINE_PROXY_ADMIN_URL=http://127.0.0.1:$(sed -n 's/^PROXY_ADMIN_URL=http:\/\/127.0.0.1://p' "$work/run/state")" "$work/run/env"
check "up: env names the kind cluster's kubeconfig" grep -qx "FAULTLINE_ADMIN_KUBECONFIG=$work/run/admin.kubeconfig" "$work/run/env"
check "up: the admin key was extracted from the kubeconfig" grep -qx admin-key-pem "$work/run/pki/admin.key"
applied=$work/state/applied-yunikorn.yaml
check "up: the applied Deployment runs faultline-proxy as a native sidecar" \
  grep -q 'restartPolicy: Always' "$applied"
check "up: the scheduler container is pointed at the sidecar" \
  bash -c "grep -A3 'name: KUBERNETES_SERVICE_HOST' \"\$1\" | grep -q '127.0.0.1'" _ "$applied"
check "up: the proxy CA applied is the one generated in the run dir" \
  grep -q "$(base64 -w0 <"$work/run/pki/ca.crt")" "$applied"
check "up: yunikorn-build.json names the official image" \
  quiet jq -e '.source == "image" and .image == "apache/yunikorn:scheduler-1.9.0"' "$work/run/yunikorn-build.json"
declare -A forward_pid
for pf in yunikorn proxy-admin proxy; do
  read -r pid _ <"$work/run/pids/port-forward-$pf"
  forward_pid[$pf]=$pid
  check "up: port-forward $pf runs" kill -0 "$pid"
done
export STUB_LOG=$work/status.log
check "status: succeeds while the port-forwards run" quiet "$repo/scripts/kind" status --run-dir "$work/run"
export STUB_LOG=$work/down.log
"$repo/scripts/kind" down --run-dir "$work/run" >/dev/null
check "down: the expected calls in order" same_calls "$work/down.log" expected-down.calls
# Gone, or a zombie nobody reaps (the stub's parent has exited; in a container pid 1 may not reap).
# SIGTERM was sent: give the process up to 5 s to go.
gone() {
  local i
  for ((i = 0; i < 50; i++)); do
    [[ ! -e /proc/$1/stat || $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]] && return 0
    sleep 0.1
  done
  return 1
}
for pf in yunikorn proxy-admin proxy; do check "down: port-forward $pf stopped" gone "${forward_pid[$pf]}"; done
check "down: the env file is gone" test ! -e "$work/run/env"
check "down: logs were collected" test -s "$work/run/logs/scheduler.log"

# An `up` that must fail: its output in $work/out. (Output to a file and `timeout`: an `up` that
# wrongly succeeds leaves port-forwards running.)
up_fails() { # case run-dir
  if timeout 120 "$repo/scripts/kind" up --run-dir "$2" >"$work/out" 2>&1; then
    check "$1: up fails" false
    return 1
  fi
}

# ---- sha256 mismatch: nothing is created ----------------------------------------------------
export STUB_LOG=$work/mismatch.log
sed -i "s/^KWOK_STAGES_SHA256=.*/KWOK_STAGES_SHA256=$(sha other)/" "$work/versions.env"
up_fails mismatch "$work/run2" &&
  check "mismatch: up names the artifact and both sha256" grep -q "sha256 mismatch for stage-fast.yaml: downloaded $(sha $'stage-fast.yaml of the stub\n'), .* pins $(sha other)" "$work/out"
check "mismatch: no cluster was created" bash -c "! grep -q '^kind create' \"\$1\"" _ "$work/mismatch.log"

# ---- a pin that is not filled in: nothing is downloaded -------------------------------------
export STUB_LOG=$work/unpinned.log
sed -i "s/^YUNIKORN_CHART_SHA256=.*/YUNIKORN_CHART_SHA256=/" "$work/versions.env"
up_fails unpinned "$work/run3" &&
  check "unpinned: up says which pin is missing and how to fill it" grep -q "pins no sha256 in YUNIKORN_CHART_SHA256.*scripts/kind pin" "$work/out"
check "unpinned: nothing was downloaded or created" bash -c "! grep -q -e '^curl' -e '^helm pull' -e '^kind create' \"\$1\" 2>/dev/null" _ "$work/unpinned.log"

# ---- a failing step after the cluster exists: logs collected, cluster deleted ---------------
write_pins
export STUB_LOG=$work/fail.log
STUB_FAIL="kubectl --kubeconfig $work/run4/admin.kubeconfig -n yunikorn rollout" up_fails "failed step" "$work/run4" &&
  check "failed step: up says what did not become ready" grep -q "YuniKorn's deployment (with the faultline-proxy sidecar) did not become available" "$work/out"
check "failed step: the cluster was deleted" grep -qx "kind delete cluster --name fl-test" "$work/fail.log"
check "failed step: no cluster left" bash -c "! grep -qx fl-test \"\$1\"" _ "$work/state/clusters"

# ---- scripts/chaos --cluster kind: up, harness with the kind env, logs, down ----------------
export STUB_LOG=$work/chaos.log STUB_NODES=0
FAULTLINE_HARNESS_BIN=$work/bin/faultline-harness timeout 120 "$repo/scripts/chaos" --cluster kind \
  --scenario yunikorn-3355-outage --scheduler yunikorn --run-dir "$work/run5" --out "$work/report" >"$work/out" 2>&1 ||
  { cat "$work/out"; check "chaos --cluster kind: exits 0 (verdict reproduced)" false; }
check "chaos --cluster kind: the expected calls in order" same_calls "$work/chaos.log" expected-chaos.calls
check "chaos --cluster kind: the harness read the kind env file" grep -qx "FAULTLINE_CLUSTER=kind" "$work/state/harness-env"
check "chaos --cluster kind: the cluster's logs are next to the report" test -s "$work/report/logs/faultline-proxy.log"
check "chaos --cluster kind: no cluster left" bash -c "! grep -qx fl-test \"\$1\"" _ "$work/state/clusters"

((failures == 0)) || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
