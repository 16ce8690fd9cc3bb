#!/usr/bin/env bash
# ctest unit.scripts.cluster_lib: the helpers of scripts/lib/cluster.sh that the cluster scripts
# (scripts/stack, scripts/kind, scripts/airflow) share, on their own:
# - poll_until: ends at the first success, gives up once its time is up (status 1), and with
#   --while NAME once the process recorded as DIR/pids/NAME has exited (status 2);
# - kwok_nodes_manifest: one node of scripts/stack.d/kwok-node.yaml per index, every placeholder
#   filled in.
# Usage: cluster_lib_test.sh REPO
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/faultline-cluster-lib.XXXXXX")
trap 'rm -rf "$run_dir"' EXIT
mkdir -p "$run_dir/pids"
# shellcheck source=scripts/lib/cluster.sh
source "$repo/scripts/lib/cluster.sh"

failures=0
check() { # description command...
  if "${@:2}"; then echo "ok:   $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}
status_of() { # command...: prints its exit status
  local rc=0
  "$@" || rc=$?
  echo "$rc"
}

tries=0
third_try() { tries=$((tries + 1)); ((tries >= 3)); }
never() { tries=$((tries + 1)); return 1; }

check "poll_until ends at the first success" test "$(status_of poll_until 5 0.01 third_try)" == 0
tries=0
poll_until 5 0.01 third_try
check "poll_until asked 3 times" test "$tries" == 3

tries=0
check "poll_until gives up once its time is up (status 1)" test "$(status_of poll_until 2 0.1 never)" == 1
tries=0
t0=$(date +%s%N)
poll_until 2 0.1 never || true
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
check "poll_until waited its time, not less ($elapsed_ms ms)" test "$elapsed_ms" -ge 900
check "poll_until paused between tries ($tries tries in $elapsed_ms ms)" test "$tries" -le 30

sleep 60 &
running=$!
echo "$running $(proc_start "$running")" >"$run_dir/pids/sleeper"
tries=0
check "poll_until --while a running process waits its time (status 1)" \
  test "$(status_of poll_until --while sleeper 1 0.1 never)" == 1
kill "$running"
wait "$running" 2>/dev/null || true
tries=0
check "poll_until --while a process that exited ends at once (status 2)" \
  test "$(status_of poll_until --while sleeper 30 0.1 never)" == 2
check "process_gone once it exited" process_gone "$running"
check "process_gone not for this shell" test "$(status_of process_gone $$)" == 1

manifest=$(kwok_nodes_manifest 2)
check "kwok_nodes_manifest 2 names kwok-node-0 and kwok-node-1" \
  test "$(grep -c '^  name: kwok-node-[01]$' <<<"$manifest")" == 2
# shellcheck disable=SC2016 # a literal placeholder
check "kwok_nodes_manifest fills in every placeholder" test "$(grep -c '\${[A-Z]' <<<"$manifest")" == 0
check "kwok_nodes_manifest sets capacity and allocatable" \
  test "$(grep -cE '^  (capacity|allocatable): \{cpu: "32", memory: 256Gi, pods: "110"\}$' <<<"$manifest")" == 4

((failures == 0)) || { echo "$failures check(s) failed"; exit 1; }
