#!/usr/bin/env bash
# YUNIKORN=DIR (and YUNIKORN_CORE=DIR2) build yunikorn-scheduler from DIR (and DIR2): a copy of the
# pinned k8shim source with a marker in a log message of pkg/cmd/shim, and a copy of the pinned
# yunikorn-core source (a git checkout with one commit) with a marker in pkg/entrypoint, must give
# one binary that carries both markers, whose build info replaces both modules with the copies,
# and whose yunikorn-build.json names both (the core with its commit), while the other components
# stay the pinned ones.
#
#   yunikorn_dir_build.sh REPO WORK_DIR
# WORK_DIR is kept between runs: the variant is keyed by the source's content and path, so a rerun
# with nothing changed finds it built.
set -euo pipefail

repo=$1
work=$2
components=$repo/scripts/components
marker=faultline-yunikorn-dir-build-marker
core_marker=faultline-yunikorn-core-dir-build-marker
fail() { echo "FAIL: $*" >&2; exit 1; }

checkout=$work/yunikorn-k8shim
rm -rf "$checkout"
mkdir -p "$work"
cp -r "$(env -u YUNIKORN -u YUNIKORN_CORE "$components" source)" "$checkout"
chmod -R u+w "$checkout"
sed -i "s/\"Starting scheduler\"/\"Starting scheduler ($marker)\"/" "$checkout/pkg/cmd/shim/main.go"
grep -q "$marker" "$checkout/pkg/cmd/shim/main.go" || fail "could not place the marker in pkg/cmd/shim/main.go"

core=$work/yunikorn-core
rm -rf "$core"
core_pin=$(cd "$repo/scripts/go/yunikorn" && go mod download -json github.com/apache/yunikorn-core | jq -r .Dir)
[[ -d $core_pin ]] || fail "go mod download gave no source directory for github.com/apache/yunikorn-core"
cp -r "$core_pin" "$core"
chmod -R u+w "$core"
sed -i "s/\"Starting event system\"/\"Starting event system ($core_marker)\"/" "$core/pkg/entrypoint/entrypoint.go"
grep -q "$core_marker" "$core/pkg/entrypoint/entrypoint.go" || fail "could not place the marker in pkg/entrypoint/entrypoint.go"
git -C "$core" init -q
git -C "$core" add -A
git -C "$core" -c user.name=faultline -c user.email=faultline@localhost commit -qm "core with a marker"
core_commit=$(git -C "$core" rev-parse HEAD)

export YUNIKORN=$checkout YUNIKORN_CORE=$core
nice "$components" build
bin=$("$components" path)
pinned=$(env -u YUNIKORN -u YUNIKORN_CORE "$components" path)
[[ $bin != "$pinned" ]] || fail "YUNIKORN=$checkout resolved to the pinned directory $pinned"

grep -aq "$marker" "$bin/yunikorn-scheduler" || fail "$bin/yunikorn-scheduler does not carry the marker of $checkout"
grep -aq "$core_marker" "$bin/yunikorn-scheduler" || fail "$bin/yunikorn-scheduler does not carry the marker of $core"
! grep -aq "$marker" "$pinned/yunikorn-scheduler" || fail "the pinned yunikorn-scheduler carries the marker"
! grep -aq "$core_marker" "$pinned/yunikorn-scheduler" || fail "the pinned yunikorn-scheduler carries the core's marker"

# go version -m: "mod <module> <version>" (the module of the package built) or "dep ...", followed
# by "=> <replacement>" for a replaced module.
buildinfo=$(go version -m "$bin/yunikorn-scheduler")
awk -v dir="$checkout" '$1 == "mod" || $1 == "dep" { last = $2 } $1 == "=>" && last == "github.com/apache/yunikorn-k8shim" && $2 == dir { found = 1 }
  END { exit !found }' <<<"$buildinfo" ||
  fail "the build info does not replace github.com/apache/yunikorn-k8shim with $checkout:"$'\n'"$buildinfo"
awk -v dir="$core" '$1 == "mod" || $1 == "dep" { last = $2 } $1 == "=>" && last == "github.com/apache/yunikorn-core" && $2 == dir { found = 1 }
  END { exit !found }' <<<"$buildinfo" ||
  fail "the build info does not replace github.com/apache/yunikorn-core with $core:"$'\n'"$buildinfo"

info=$("$components" build-info)
# The copy is no git checkout (it lies in the build tree of faultline's): no commit, no dirty flag.
jq -e --arg d "$checkout" '.source == "dir" and .dir == $d and .module == "github.com/apache/yunikorn-k8shim"
  and .commit == null and .dirty == null' <<<"$info" >/dev/null ||
  fail "yunikorn-build.json does not name $checkout (without a commit): $info"
jq -e --arg d "$core" --arg c "$core_commit" '.core.source == "dir" and .core.dir == $d
  and .core.module == "github.com/apache/yunikorn-core" and .core.commit == $c and .core.dirty == false' <<<"$info" >/dev/null ||
  fail "yunikorn-build.json does not name $core at commit $core_commit, clean: $info"
[[ $(jq -r .binarySha256 <<<"$info") == $(sha256sum <"$bin/yunikorn-scheduler" | cut -d' ' -f1) ]] ||
  fail "yunikorn-build.json describes another binary than $bin/yunikorn-scheduler"

for b in etcd kube-apiserver kube-controller-manager kubectl kwok kube-scheduler; do
  [[ $(readlink -f "$bin/$b") == $(readlink -f "$pinned/$b") ]] || fail "$bin/$b is not the pinned $b"
done

"$components" versions | grep -F "$checkout" | grep -q '^\*' || fail "scripts/components versions does not list $checkout as the selected variant"

# The build is keyed by the content: one more line in a source file is a build not made yet.
echo "// changed" >>"$checkout/pkg/cmd/shim/main.go"
! "$components" path >/dev/null 2>&1 || fail "a changed $checkout still resolves to the binary built before the change"
sed -i '$d' "$checkout/pkg/cmd/shim/main.go"
[[ $("$components" path) == "$bin" ]] || fail "$checkout as it was built no longer resolves to $bin"
# The core checkout counts too: an uncommitted change is a build not made yet.
echo "// changed" >>"$core/pkg/entrypoint/entrypoint.go"
! "$components" path >/dev/null 2>&1 || fail "a changed $core still resolves to the binary built before the change"
git -C "$core" checkout -q -- pkg/entrypoint/entrypoint.go
[[ $("$components" path) == "$bin" ]] || fail "$core as it was built no longer resolves to $bin"
# A new commit of the same tree (an amend) finds the same binary, and the build info names the
# new commit: a report must say which checkout ran, not which one was built first.
git -C "$core" -c user.name=faultline -c user.email=faultline@localhost commit -q --amend -m "core with a marker, amended"
amended=$(git -C "$core" rev-parse HEAD)
[[ $amended != "$core_commit" ]] || fail "git commit --amend kept commit $core_commit"
"$components" build >/dev/null
[[ $("$components" path) == "$bin" ]] || fail "the amended $core (same tree) no longer resolves to $bin"
jq -e --arg c "$amended" '.core.commit == $c and .core.dirty == false' <<<"$("$components" build-info)" >/dev/null ||
  fail "after an amend to $amended (same tree), yunikorn-build.json still names: $("$components" build-info)"
echo "ok: $bin/yunikorn-scheduler built from $checkout and $core"
