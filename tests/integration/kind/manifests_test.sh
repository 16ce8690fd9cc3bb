#!/usr/bin/env bash
# ctest integration.kind.manifests: what kind mode installs, accepted by a real kube-apiserver (the
# local stack's, v1.35.5) with server-side dry-run, and the sidecar's trust set-up used for real:
# - KWOK v0.8.0's release manifests, re-derived from the go.sum-verified sigs.k8s.io/kwok module
#   (kustomize/kwok and kustomize/stage/fast, image set as KWOK's hack/manifests.sh sets it): their
#   sha256 must be the ones kind/versions.env pins; kwok.yaml dry-run, its CRDs applied, then
#   stage-fast.yaml dry-run;
# - the YuniKorn chart's manifests (tests/data/kind/yunikorn-chart.yaml, shaped like the chart's
#   `helm template` output) through `scripts/kind render-yunikorn` (the sidecar patch and the proxy
#   CA's Secret/ConfigMap): dry-run, and the Deployment the apiserver returns has the sidecar;
# - kind/daemonset-not-on-kwok.yaml: dry-run as a patch of a DaemonSet shaped like kind's kube-proxy;
# - the sidecar's arguments on the real faultline-proxy, in the pod's environment (the service
#   account directory with a real token of the chart's service account and the cluster CA), and
#   the scheduler's view: its token and, as ca.crt, the proxy's CA; the apiserver sees the chart's
#   service account.
# Usage: manifests_test.sh REPO PROXY_BINARY   (needs the components: make components)
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
proxy_bin=${2:?faultline-proxy binary}
bin=${FAULTLINE_COMPONENTS_BIN:-$("$repo/scripts/components" path)} ||
  { echo "FAIL: the components are not built (make components)"; exit 1; }
export PATH=$bin:$PATH
# shellcheck source=/dev/null
source "$repo/kind/versions.env"

work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-kind-manifests.XXXXXX")
proxy_pid=""
cleanup() {
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null
  "$repo/scripts/stack" down --run-dir "$work/stack" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
check() { # description command...
  if "${@:2}"; then echo "ok:   $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

"$repo/scripts/stack" up --no-scheduler --no-proxy --nodes 0 --run-dir "$work/stack" >"$work/stack-up.log" 2>&1 ||
  { cat "$work/stack-up.log"; echo "FAIL: the local stack did not start"; exit 1; }
# shellcheck source=/dev/null
source "$work/stack/env"
k() { kubectl --kubeconfig "$FAULTLINE_ADMIN_KUBECONFIG" "$@"; }
dry_run() { k apply --server-side --dry-run=server "$@" >"$work/dry-run.out" 2>&1 || { cat "$work/dry-run.out"; return 1; }; }

# ---- KWOK's release manifests ----------------------------------------------------------------
module=$(cd "$repo/scripts/go/kwok" && GOSUMDB=off GOFLAGS=-mod=readonly go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION")
check "the kwok module is the one scripts/go/kwok/go.sum pins" \
  grep -qx "sigs.k8s.io/kwok $KWOK_VERSION $(jq -r .Sum <<<"$module")" "$repo/scripts/go/kwok/go.sum"
cp -r "$(jq -r .Dir <<<"$module")/kustomize" "$work/kustomize"
chmod -R u+w "$work/kustomize"
# What `kustomize edit set image registry.k8s.io/kwok/kwok=$KWOK_IMAGE` adds (hack/manifests.sh).
printf 'images:\n- name: registry.k8s.io/kwok/kwok\n  newName: %s\n  newTag: %s\n' "${KWOK_IMAGE%:*}" "${KWOK_IMAGE##*:}" \
  >>"$work/kustomize/kwok/kustomization.yaml"
kubectl kustomize "$work/kustomize/kwok" >"$work/kwok.yaml"
kubectl kustomize "$work/kustomize/stage/fast" >"$work/stage-fast.yaml"
sha() { sha256sum "$1" | awk '{print $1}'; }
check "kwok.yaml re-derived from the sources has the pinned sha256 ($(sha "$work/kwok.yaml"))" \
  test "$(sha "$work/kwok.yaml")" == "$KWOK_MANIFEST_SHA256"
check "stage-fast.yaml re-derived from the sources has the pinned sha256 ($(sha "$work/stage-fast.yaml"))" \
  test "$(sha "$work/stage-fast.yaml")" == "$KWOK_STAGES_SHA256"
check "kwok.yaml runs the pinned image" grep -q "image: $KWOK_IMAGE\$" "$work/kwok.yaml"
check "kwok.yaml: server-side dry-run accepted" dry_run -f "$work/kwok.yaml"
k apply --dry-run=client -o json -f "$work/kwok.yaml" | jq '.items |= map(select(.kind == "CustomResourceDefinition"))' |
  k apply --server-side -f - >/dev/null
# Polled, not `kubectl wait --for condition=established`: that fails at once (".status.conditions
# accessor error: <nil>") when it reads the CRD before the apiserver has given it any status.
established() {
  [[ $(k get crd stages.kwok.x-k8s.io -o jsonpath='{.status.conditions[?(@.type=="Established")].status}') == True ]]
}
for ((i = 0; i < 600; i++)); do established && break; sleep 0.1; done
check "the CRDs of kwok.yaml are established" established
check "stage-fast.yaml (Stages, CRDs applied): server-side dry-run accepted" dry_run -f "$work/stage-fast.yaml"

# ---- YuniKorn's chart with the faultline-proxy sidecar ----------------------------------------
mkdir -p "$work/ca"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/ca/ca.key" \
  -out "$work/ca/ca.crt" -days 1 -subj /CN=faultline-proxy-kind-ca \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
"$repo/scripts/kind" render-yunikorn "$repo/tests/data/kind/yunikorn-chart.yaml" "$work/ca" >"$work/yunikorn.yaml"
k create namespace yunikorn >/dev/null
check "the chart's manifests with the sidecar: server-side dry-run accepted" dry_run -n yunikorn -f "$work/yunikorn.yaml" -o json
deployment=$(jq '(.items // [.])[] | select(.kind == "Deployment")' "$work/dry-run.out")
has() { jq -e "$1" <<<"$deployment" >/dev/null; }
check "dry-run Deployment: faultline-proxy is a native sidecar (init container, restartPolicy Always)" \
  has '.spec.template.spec.initContainers[] | select(.name == "faultline-proxy") | .restartPolicy == "Always"'
check "dry-run Deployment: the scheduler container talks to 127.0.0.1:8443" \
  has '[.spec.template.spec.containers[] | select(.name == "yunikorn-scheduler-k8s") | .env[] | select(.name | startswith("KUBERNETES_SERVICE_")) | .value] == ["127.0.0.1", "8443"]'
check "dry-run Deployment: the scheduler's service-account path is the projected token + proxy CA" \
  has '.spec.template.spec.containers[] | select(.name == "yunikorn-scheduler-k8s") | .volumeMounts[] | select(.mountPath == "/var/run/secrets/kubernetes.io/serviceaccount") | .name == "faultline-serviceaccount"'
check "dry-run Deployment: the chart's service account, env and resources are kept" \
  has '.spec.template.spec.serviceAccountName == "yunikorn-admin" and (.spec.template.spec.containers[0].env | map(.name) | index("GOMEMLIMIT") != null) and .spec.template.spec.containers[0].resources.limits.memory == "2Gi"'

# ---- kind's DaemonSets kept off KWOK nodes ----------------------------------------------------
k -n kube-system create -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-proxy, labels: {k8s-app: kube-proxy}}
spec:
  selector: {matchLabels: {k8s-app: kube-proxy}}
  template:
    metadata: {labels: {k8s-app: kube-proxy}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      tolerations: [{operator: Exists}]
      containers: [{name: kube-proxy, image: registry.k8s.io/kube-proxy:v1.35.0}]
EOF
# shellcheck disable=SC2016 # expanded by the inner bash
check "daemonset-not-on-kwok.yaml: server-side dry-run of the patch accepted, affinity excludes type=kwok" \
  bash -c 'kubectl --kubeconfig "$1" -n kube-system patch daemonset kube-proxy --type strategic --patch-file "$2" --dry-run=server -o json |
    jq -e ".spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0] == {\"key\": \"type\", \"operator\": \"NotIn\", \"values\": [\"kwok\"]}" >/dev/null' \
  _ "$FAULTLINE_ADMIN_KUBECONFIG" "$repo/kind/daemonset-not-on-kwok.yaml"

# ---- the sidecar for real: its arguments, the pod's environment, the scheduler's view ---------
# The chart's service account and RBAC for real (the Secret/ConfigMap too: they are valid).
k apply --server-side -n yunikorn -f "$work/yunikorn.yaml" >/dev/null
# The proxy container's service-account directory as the kubelet projects it: a token of the
# chart's service account and the cluster's CA.
mkdir -p "$work/proxy-sa" "$work/run"
k -n yunikorn create token yunikorn-admin --duration 1h >"$work/proxy-sa/token"
cp "$FAULTLINE_CA_CERT" "$work/proxy-sa/ca.crt"
# The sidecar's arguments from the rendered Deployment, with its mount paths moved into $work and
# free ports instead of 8443/8444 (tests run in parallel on one machine).
mapfile -t args < <(jq -r '.spec.template.spec.initContainers[] | select(.name == "faultline-proxy") | .args[]' <<<"$deployment" |
  sed -e "s|/etc/faultline-proxy/ca|$work/ca|" -e "s|/run/faultline-proxy|$work/run|" \
    -e 's|^--listen=127.0.0.1:8443$|--listen=127.0.0.1:0|' -e 's|^--admin=127.0.0.1:8444$|--admin=127.0.0.1:0|')
upstream=${FAULTLINE_APISERVER_URL#https://}
KUBERNETES_SERVICE_HOST=${upstream%:*} KUBERNETES_SERVICE_PORT=${upstream##*:} \
  "$proxy_bin" "${args[@]}" --service-account-dir "$work/proxy-sa" >"$work/proxy.log" 2>&1 &
proxy_pid=$!
for ((i = 0; i < 300; i++)); do [[ -s $work/run/ready.json ]] && break; sleep 0.1; done
check "the real faultline-proxy starts with the sidecar's arguments (ready file written)" test -s "$work/run/ready.json"
listen=$(jq -r .listen "$work/run/ready.json" 2>/dev/null || true)
# The scheduler's projected directory: its own token of the chart's service account, and the
# proxy's CA as ca.crt. client-go's in-cluster config sends the token to https://127.0.0.1:PORT.
scheduler_token=$(k -n yunikorn create token yunikorn-admin --duration 1h)
review=$(curl -sS --cacert "$work/ca/ca.crt" -H "Authorization: Bearer $scheduler_token" -H 'Content-Type: application/json' \
  -X POST --data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
  "https://$listen/apis/authentication.k8s.io/v1/selfsubjectreviews" 2>&1 || true)
check "through the sidecar, trusting only the proxy's CA, the apiserver sees the chart's service account" \
  test "$(jq -r .status.userInfo.username <<<"$review" 2>/dev/null)" == "system:serviceaccount:yunikorn:yunikorn-admin"
# SIGTERM: the proxy drains and flushes its audit log.
kill -TERM "$proxy_pid" 2>/dev/null || true
wait "$proxy_pid" 2>/dev/null || true
proxy_pid=""
check "the scheduler's request is in the proxy's audit log" grep -q selfsubjectreviews "$work/run/audit.jsonl"

if ((failures > 0)); then
  echo "--- faultline-proxy log"
  cat "$work/proxy.log"
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
