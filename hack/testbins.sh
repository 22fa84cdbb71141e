#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that envtest starts, from the e2e module (which pins
# k8s.io/kubernetes and go.etcd.io/etcd/server/v3 as tools), into the given directory. Each binary has a stamp
# naming the version it was built from; a binary whose stamp matches is not rebuilt, so a second `make test`
# costs nothing here.
set -euo pipefail

bin_dir=${1:?usage: testbins.sh BIN_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$bin_dir"

build() { # name package version [ldflags]
  local name=$1 pkg=$2 version=$3 ldflags=${4:-}
  local stamp="$bin_dir/.$name.version"
  # The stamp names the link flags too: a binary built without them is built again.
  local want="$version${ldflags:+ $ldflags}"
  if [[ -x "$bin_dir/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "testbins: $name $version is up to date"
    return
  fi
  echo "testbins: building $name $version (a cold build of kube-apiserver takes ~12 min on 2 cores)"
  local start=$SECONDS
  # No -trimpath: the apiserver's test helpers locate their certificates through runtime.Caller.
  (cd "$root/e2e" && go build ${ldflags:+-ldflags "$ldflags"} -o "$bin_dir/$name" "$pkg")
  echo "$want" >"$stamp"
  echo "testbins: built $name in $((SECONDS - start))s"
}

build etcd go.etcd.io/etcd/server/v3 "${ETCD_VERSION:?}"
# A release build's version stamp (hack/lib/version.sh in kubernetes): without it /version says
# v0.0.0-master+$Format:%H$, which kubectl version and helm's kubeVersion check cannot parse.
kube_minor=${KUBE_VERSION#v*.}
kube_minor=${kube_minor%%.*}
kube_major=${KUBE_VERSION#v}
kube_major=${kube_major%%.*}
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$kube_major -X $pkg.gitMinor=$kube_minor -X $pkg.gitTreeState=clean"
done
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${KUBE_VERSION:?}" "${kube_ldflags# }"
