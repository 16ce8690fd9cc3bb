#!/usr/bin/env bash
# K8S selects the Kubernetes wrapper module scripts/components builds from, and nothing else:
# - an unknown K8S is an error that lists the pinned releases;
# - the pin hash of one release covers its own wrapper module only (a change to the other
#   release's go.sum leaves it alone; a change to its own does not);
# - the built default directory lists kube-controller-manager in versions.json at the pinned
#   release, and its kube-apiserver reports that release;
# - a new pin directory takes every group whose pins are unchanged from a complete directory as
#   hard links, without running `go build` (a `go` on PATH that refuses to build proves it), and
#   K8S=OTHER links etcd from there while it builds Kubernetes from the other wrapper module.
#
#   k8s_select.sh REPO WORK_DIR    (needs the default components built: make components)
set -euo pipefail

repo=$1
work=$2
components=$repo/scripts/components
fail() { echo "FAIL: $*" >&2; exit 1; }
unset K8S YUNIKORN YUNIKORN_CORE

rm -rf "$work"
mkdir -p "$work"

mapfile -t releases < <(cd "$repo/scripts/go/kubernetes" && for d in v*/; do echo "${d%/}"; done)
((${#releases[@]} >= 2)) || fail "expected at least two pinned releases under scripts/go/kubernetes, found: ${releases[*]}"
default=$(awk -F= '/^k8s_default=/ { print $2; exit }' "$components")
other=""
for r in "${releases[@]}"; do [[ $r != "$default" ]] && other=$r; done

# An unknown release: an error naming what there is.
if out=$(K8S=v1.0.0 "$components" hash 2>&1); then fail "K8S=v1.0.0 was accepted: $out"; fi
for r in "${releases[@]}"; do
  [[ $out == *"$r"* ]] || fail "the error for K8S=v1.0.0 does not list $r: $out"
done
if out=$(K8S=../etcd "$components" path 2>&1); then fail "K8S=../etcd was accepted: $out"; fi

# The hash follows K8S, and each release's hash covers its own module only.
h_default=$("$components" hash)
[[ $(K8S=$default "$components" hash) == "$h_default" ]] || fail "K8S=$default is not the default"
h_other=$(K8S=$other "$components" hash)
[[ $h_other != "$h_default" ]] || fail "K8S=$other and K8S=$default have the same pin hash $h_default"
copy=$work/scripts
mkdir -p "$copy"
cp "$components" "$copy/"
cp -r "$repo/scripts/go" "$copy/go"
echo "example.invalid/x v0.0.0 h1:AAAA=" >>"$copy/go/kubernetes/$other/go.sum"
[[ $("$copy/components" hash) == "$h_default" ]] || fail "a change to $other's go.sum changed the hash of $default"
[[ $(K8S=$other "$copy/components" hash) != "$h_other" ]] || fail "a change to $other's go.sum left its hash alone"

# The built default: kube-controller-manager beside kube-apiserver, at the pinned release.
bin=$("$components" path)
versions=$bin/../versions.json
jq -e --arg v "$default" '.kubernetes == $v and .components["kube-controller-manager"].module == "k8s.io/kubernetes"
  and .components["kube-controller-manager"].version == $v and .components["kube-apiserver"].version == $v' \
  "$versions" >/dev/null || fail "$versions does not list kube-controller-manager and kube-apiserver at $default: $(cat "$versions")"
[[ $("$bin/kube-controller-manager" --version) == "Kubernetes $default" ]] ||
  fail "kube-controller-manager --version says: $("$bin/kube-controller-manager" --version)"
jq -e --arg v "Kubernetes $default" '.components["kube-controller-manager"].reports == $v' "$versions" >/dev/null ||
  fail "versions.json does not carry what kube-controller-manager --version reports"

# Reuse: a cache holding only a copy (hard links) of the default directory under another name.
cache=$work/cache
mkdir -p "$cache/components"
cp -al "$(dirname "$bin")" "$cache/components/0000000000000000"
[[ -f $cache/components/0000000000000000/group-hashes ]] || fail "$(dirname "$bin") has no group-hashes"
stub=$work/stub
mkdir -p "$stub"
real_go=$(command -v go)
cat >"$stub/go" <<EOF
#!/usr/bin/env bash
if [[ \${1:-} == build ]]; then echo "stub go: go build \$* refused" >&2; exit 97; fi
exec "$real_go" "\$@"
EOF
chmod +x "$stub/go"
export FAULTLINE_CACHE_DIR=$cache
out=$(PATH=$stub:$PATH "$components" build 2>&1) || fail "a build with every group's pins in the cache failed:"$'\n'"$out"
[[ $out != *building* ]] || fail "a build with every group's pins in the cache built something:"$'\n'"$out"
new=$("$components" path)
[[ $new == "$cache/components/$h_default/bin" ]] || fail "the new directory is $new"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok yunikorn-scheduler; do
  [[ ! -L $new/$b && $(stat -c %i "$new/$b") == $(stat -c %i "$bin/$b") ]] || fail "$new/$b is not a hard link to $bin/$b"
done
# versions.json is written again for the new directory (from the binaries): the same as the original's.
[[ $(jq -S .components "$new/../versions.json") == $(jq -S .components "$versions") ]] ||
  fail "versions.json of $new differs from $versions:"$'\n'"$(cat "$new/../versions.json")"
jq -e --arg v "Kubernetes $default" '.components["kube-controller-manager"].reports == $v' "$new/../versions.json" >/dev/null ||
  fail "$new/../versions.json does not carry what kube-controller-manager --version reports"

# The other release: etcd is linked, Kubernetes is built from its own wrapper module (the stub
# refuses, which is where this check stops).
if out=$(K8S=$other PATH=$stub:$PATH "$components" build 2>&1); then fail "the stub go built $other:"$'\n'"$out"; fi
[[ $out == *"etcd linked from"* ]] || fail "K8S=$other did not link etcd:"$'\n'"$out"
[[ $out == *"(go/kubernetes/$other)"* && $out == *"stub go: go build"* ]] ||
  fail "K8S=$other did not build Kubernetes from scripts/go/kubernetes/$other:"$'\n'"$out"
echo "ok: K8S selects scripts/go/kubernetes/<release>; unchanged groups are linked, not rebuilt"
