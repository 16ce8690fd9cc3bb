#!/usr/bin/env bash
# `scripts/stack reset` on a YuniKorn stack (what scripts/soak --matrix does between runs) leaves
# YuniKorn ready for the next run: when reset returns, its REST API already has the partition the
# harness reads (GET /ws/v1/partition/default/queues). A reset that returned as soon as the
# healthcheck said Healthy left a window in which that answered 404 "Partition not found", and
# every reused run of a sweep ended `error`.
#
#   stack_reset_yunikorn.sh REPO WORK_DIR
set -euo pipefail

repo=$1
dir=$2
stack=$repo/scripts/stack
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$dir"
mkdir -p "$dir"
trap '"$stack" down --run-dir "$dir" >/dev/null 2>&1 || true' EXIT
"$stack" up --scheduler yunikorn --nodes 2 --run-dir "$dir" --no-proxy 2>&1 | tail -n 3
url=$(grep "^FAULTLINE_YUNIKORN_URL=" "$dir/env" | cut -d= -f2-)
[[ -n $url ]] || fail "no FAULTLINE_YUNIKORN_URL in $dir/env"
for round in 1 2 3; do
  "$stack" reset --run-dir "$dir" 2>&1 | tail -n 1
  code=$(curl -s -o "$dir/queues.json" -w '%{http_code}' "$url/ws/v1/partition/default/queues")
  [[ $code == 200 ]] || fail "reset $round returned before YuniKorn was ready: queues answered $code: $(head -c 300 "$dir/queues.json")"
  jq -e '.queuename == "root"' "$dir/queues.json" >/dev/null || fail "reset $round: queues of partition default are not root's: $(head -c 300 "$dir/queues.json")"
done
echo "ok: after each of 3 resets YuniKorn served partition default's queues at once"
